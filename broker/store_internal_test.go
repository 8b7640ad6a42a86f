package broker

import (
	"log/slog"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
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
