package broker

import (
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"
)

// ownStrings gives a retained publish its own copies of its strings before
// mochi keeps it. mochi decodes strings as views into the packet's read
// buffer (packets.bytesToString), and the copy it retains (Packet.Copy)
// copies the payload but not the strings, so the topic (the retained map's
// key and the topic tree's path) would keep the whole read buffer, payload
// included, alive for as long as the message stays retained: a second copy
// of every retained payload, ~3 KiB per device with the bench's reports.
func ownStrings(pk *packets.Packet) {
	pk.TopicName = strings.Clone(pk.TopicName)
	pk.Properties.ContentType = strings.Clone(pk.Properties.ContentType)
	pk.Properties.ResponseTopic = strings.Clone(pk.Properties.ResponseTopic)
	if len(pk.Properties.User) == 0 {
		return
	}
	user := make([]packets.UserProperty, len(pk.Properties.User))
	for i, u := range pk.Properties.User {
		user[i] = packets.UserProperty{Key: strings.Clone(u.Key), Val: strings.Clone(u.Val)}
	}
	pk.Properties.User = user
}
