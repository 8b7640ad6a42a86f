package broker

import (
	"log/slog"
	"testing"
	"unsafe"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/packets"
)

// BenchmarkStoreInflight is the store's share of one QoS 1 delivery: mochi
// calls OnQosPublish when it sends and OnQosComplete on the PUBACK.
func BenchmarkStoreInflight(b *testing.B) {
	for _, tc := range []struct {
		name   string
		expiry uint32
	}{{"persistent", 3600}, {"clean", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := openStore(b.TempDir(), slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Stop()
			cl := mqtt.New(nil).NewClient(nil, "bench", "sub-1", false)
			cl.Properties.ProtocolVersion = 5
			cl.Properties.Props.SessionExpiryInterval = tc.expiry
			s.OnSessionEstablished(cl, packets.Packet{})
			pk := packets.Packet{
				FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
				TopicName:   "chorus/v1/benchdev/bus/bench", Payload: make([]byte, 64), Created: 1,
			}
			ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				pk.PacketID = uint16(i%1000 + 1)
				ack.PacketID = pk.PacketID
				s.OnQosPublish(cl, pk, pk.Created, 0)
				s.OnQosComplete(cl, ack)
			}
		})
	}
}

// TestPendingChangeHoldsTheStoredMessage: a pending retained or in-flight
// change holds the message's storage form (a change small enough for its map
// slot, not an ~800-byte packets.Packet that made each pending change an
// allocation of its own), and the writer stores it under its row key.
func TestPendingChangeHoldsTheStoredMessage(t *testing.T) {
	if size := unsafe.Sizeof(change{}); size > 128 {
		t.Fatalf("change is %d bytes: a map stores an element over 128 bytes in an allocation of its own", size)
	}
	dir := t.TempDir()
	s, err := openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cl := mqtt.New(nil).NewClient(nil, "t", "dev-1", false)
	cl.Properties.ProtocolVersion = 5
	cl.Properties.Props.SessionExpiryInterval = 3600
	s.OnSessionEstablished(cl, packets.Packet{})
	retained := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1, Retain: true},
		TopicName:   "chorus/v1/dev-1/skills", Payload: []byte(`{"skills":[]}`), Created: 7,
		Properties: packets.Properties{ContentType: "application/json"},
	}
	s.OnRetainMessage(cl, retained, 1)
	inflight := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
		TopicName:   "chorus/v1/dev-1/desired", Payload: []byte(`{}`), PacketID: 42, Created: 8,
	}
	s.OnQosPublish(cl, inflight, 9, 0)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s, err = openStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rets, err := s.StoredRetainedMessages()
	if err != nil || len(rets) != 1 {
		t.Fatalf("retained after restart: %v, %v", rets, err)
	}
	if r := rets[0]; r.ID != storage.RetainedKey+"_chorus/v1/dev-1/skills" || r.TopicName != retained.TopicName ||
		string(r.Payload) != string(retained.Payload) || r.Client != "dev-1" || r.Created != 7 ||
		r.Properties.ContentType != "application/json" || !r.FixedHeader.Retain {
		t.Fatalf("retained row: %+v", r)
	}
	ifs, err := s.StoredInflightMessages()
	if err != nil || len(ifs) != 1 {
		t.Fatalf("in flight after restart: %v, %v", ifs, err)
	}
	if m := ifs[0]; m.ID != storage.InflightKey+"_dev-1:42" || m.PacketID != 42 || m.Sent != 9 || m.Created != 8 ||
		string(m.Payload) != "{}" || m.Client != "dev-1" {
		t.Fatalf("in-flight row: %+v", m)
	}
}
