package broker

import (
	"bytes"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// A retained message must not keep its read buffer alive: after ownStrings,
// overwriting the buffer mochi decoded from leaves every string intact.
func TestOwnStringsDetachesFromReadBuffer(t *testing.T) {
	in := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: 1, Retain: true},
		ProtocolVersion: 5,
		TopicName:       "chorus/v1/pi-1/skills",
		PacketID:        7,
		Mods:            packets.Mods{AllowResponseInfo: true},
		Payload:         []byte(`{"skills":[]}`),
		Properties: packets.Properties{
			ContentType: "application/json", ResponseTopic: "chorus/v1/pi-1/bus/reply",
			User: []packets.UserProperty{{Key: "k", Val: "v"}},
		},
	}
	var wire bytes.Buffer
	if err := in.PublishEncode(&wire); err != nil {
		t.Fatal(err)
	}
	var fh packets.FixedHeader
	b := wire.Bytes()
	if err := fh.Decode(b[0]); err != nil {
		t.Fatal(err)
	}
	body := bytes.Clone(b[2:]) // remaining length fits one byte here
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: 5}
	if err := pk.PublishDecode(body); err != nil {
		t.Fatal(err)
	}
	ownStrings(&pk)
	for i := range body {
		body[i] = 'X'
	}
	got := []string{pk.TopicName, pk.Properties.ContentType, pk.Properties.ResponseTopic, pk.Properties.User[0].Key, pk.Properties.User[0].Val}
	want := []string{in.TopicName, in.Properties.ContentType, in.Properties.ResponseTopic, "k", "v"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("string %d = %q after the buffer changed, want %q", i, got[i], want[i])
		}
	}
}

// The retained sweep is replaced through an unexported mochi field; a mochi
// upgrade that moves it must fail here, not silently bring back the
// per-second copy of every retained message.
func TestMochiRetainedSweepFound(t *testing.T) {
	b, err := Start(Config{MQTTListen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.swept {
		t.Fatal("mochi's retained expiry sweep or retained map not found (Server.loop.retainedExpiry, Packets.internal)")
	}
}
