package broker

import (
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// OnWill checks a Will again when mochi is about to send it (after its
// delay, if it has one: broker/mochi checks delayed Wills when they are
// due): the table may have changed since CONNECT (a revoked device, a
// withdrawn skill grant), and a Will must never carry what its client could
// not publish now. A rejected Will is dropped (packets.ErrRejectPacket, a
// broker/mochi patch). The account is looked up by username, not session:
// a delayed Will outlives its connection.
func (p *policy) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	var r *refusal
	if !ok {
		r = refused(packets.ErrNotAuthorized, "the account no longer exists", countACL)
	} else {
		r = p.check(a, will.TopicName, will.Payload, will.Retain)
	}
	if r == nil {
		return will, nil
	}
	p.stats.willsRefused.Add(1)
	p.publishLog.log(p.log, slog.LevelInfo, "will dropped: "+r.why, "client", peerText(cl.ID), "topic", peerText(will.TopicName))
	return will, packets.ErrRejectPacket
}
