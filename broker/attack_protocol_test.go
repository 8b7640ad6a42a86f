package broker_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// 11. Refusals stay inside the protocol, whatever the version and QoS.
func TestAttackRefusalsStayInsideTheProtocol(t *testing.T) {
	// Each subtest's connection of pi-a is closed at its end, and the
	// broker frees its slot when it reads the close: room for a few at
	// once, so the next subtest does not race that (this test is not about
	// the connection cap).
	f := newFleet(t, broker.Config{Device: broker.RoleLimits{Connections: 8}}, nil)
	refusedTopic := "chorus/v1/pi-b/bus/speak" // another device's bus
	allowed := "chorus/v1/pi-a/bus/speak"
	msg := []byte(`{"type":"speak"}`)

	t.Run("MQTT 5 QoS 2 refused: PUBREC with the reason", func(t *testing.T) {
		c := brokertest.DialRaw(t, f.addr)
		c.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: f.a.Secret, Clean: true})
		// Refused by the ACL, and by a payload limit (an oversized
		// availability), which mochi answered with a PUBACK.
		refusals := []struct {
			topic   string
			payload []byte
			code    byte
		}{
			{refusedTopic, msg, 0x87},
			{"chorus/v1/pi-a/availability", []byte(strings.Repeat("x", 17)), 0x99},
		}
		for i, r := range refusals {
			id := uint16(10 + i)
			c.Publish(r.topic, r.payload, 2, id, packets.Properties{})
			pk, err := c.Next(wait)
			if err != nil || pk.FixedHeader.Type != packets.Pubrec || pk.PacketID != id || pk.ReasonCode != r.code {
				t.Fatalf("%s: got %+v reason %#x (%v), want PUBREC %d with %#x", r.topic, pk.FixedHeader, pk.ReasonCode, err, id, r.code)
			}
			if pk.Properties.ReasonString == "" {
				t.Fatal("no reason string")
			}
		}
		// The exchange ended; the connection goes on.
		c.Publish(allowed, msg, 2, 8, packets.Properties{})
		if rec := c.Expect(packets.Pubrec, wait); rec.ReasonCode != 0 {
			t.Fatalf("allowed QoS 2: PUBREC %#x", rec.ReasonCode)
		}
		c.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel, Qos: 1}, PacketID: 8})
		c.Expect(packets.Pubcomp, wait)
	})

	for _, qos := range []byte{1, 2} {
		t.Run("MQTT 3.1.1 refused QoS "+string('0'+qos)+": acknowledged and dropped, not disconnected", func(t *testing.T) {
			c := brokertest.DialRaw(t, f.addr)
			c.Version = 4
			c.MustConnect(brokertest.RawConnect{ClientID: "pi-a/v3", Username: "pi-a", Password: f.a.Secret, Clean: true})
			c.Publish(refusedTopic, msg, qos, 3, packets.Properties{})
			want := packets.Puback
			if qos == 2 {
				want = packets.Pubrec
			}
			if pk, err := c.Next(wait); err != nil || pk.FixedHeader.Type != want || pk.PacketID != 3 {
				t.Fatalf("got %+v (%v), want ack type %d", pk.FixedHeader, err, want)
			}
			if qos == 2 {
				c.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel, Qos: 1}, PacketID: 3})
				c.Expect(packets.Pubcomp, wait)
			}
			c.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
			if pk, err := c.Next(wait); err != nil || pk.FixedHeader.Type != packets.Pingresp {
				t.Fatalf("after the refusal: %+v (%v), want the connection alive", pk.FixedHeader, err)
			}
		})
	}

	t.Run("alias-only publish to an allowed topic", func(t *testing.T) {
		watch := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
		watch.Sub(t, allowed)
		c := brokertest.DialRaw(t, f.addr)
		c.MustConnect(brokertest.RawConnect{ClientID: "pi-a/alias", Username: "pi-a", Password: f.a.Secret, Clean: true})
		c.Publish(allowed, []byte(`{"type":"speak","data":{"n":1}}`), 1, 1, packets.Properties{TopicAlias: 1, TopicAliasFlag: true})
		if ack := c.Expect(packets.Puback, wait); ack.ReasonCode != 0 {
			t.Fatalf("alias set: PUBACK %#x", ack.ReasonCode)
		}
		c.Publish("", []byte(`{"type":"speak","data":{"n":2}}`), 1, 2, packets.Properties{TopicAlias: 1, TopicAliasFlag: true})
		if ack := c.Expect(packets.Puback, wait); ack.ReasonCode != 0 {
			t.Fatalf("alias only: PUBACK %#x (%s)", ack.ReasonCode, ack.Properties.ReasonString)
		}
		for _, n := range []string{`"n":1`, `"n":2`} {
			if m := watch.Expect(t, allowed, wait); !strings.Contains(string(m.Payload), n) {
				t.Fatalf("delivered %s, want %s", m.Payload, n)
			}
		}
		// An alias never lets a topic through that the ACL refuses.
		c.Publish(refusedTopic, msg, 1, 3, packets.Properties{TopicAlias: 2, TopicAliasFlag: true})
		c.Expect(packets.Puback, wait)
		c.Publish("", msg, 1, 4, packets.Properties{TopicAlias: 2, TopicAliasFlag: true})
		if ack := c.Expect(packets.Puback, wait); ack.ReasonCode != 0x87 {
			t.Fatalf("alias of a refused topic: %#x", ack.ReasonCode)
		}
	})

	t.Run("acks carry no inherited user properties and success is 0x00", func(t *testing.T) {
		c := brokertest.DialRaw(t, f.addr)
		c.MustConnect(brokertest.RawConnect{ClientID: "pi-a/props", Username: "pi-a", Password: f.a.Secret, Clean: true})
		props := packets.Properties{User: []packets.UserProperty{{Key: "trace", Val: "abc"}}}
		c.Publish(allowed, msg, 1, 5, props)
		ack := c.Expect(packets.Puback, wait)
		if ack.ReasonCode != 0 || len(ack.Properties.User) != 0 {
			t.Fatalf("PUBACK reason %#x, user properties %v; want 0x00 and none", ack.ReasonCode, ack.Properties.User)
		}
		c.Publish(refusedTopic, msg, 1, 6, props)
		if ack := c.Expect(packets.Puback, wait); len(ack.Properties.User) != 0 {
			t.Fatalf("refusal PUBACK carries %v", ack.Properties.User)
		}
	})

	t.Run("publish to $SYS is acknowledged", func(t *testing.T) {
		c := brokertest.DialRaw(t, f.addr)
		c.MustConnect(brokertest.RawConnect{ClientID: "pi-a/sys", Username: "pi-a", Password: f.a.Secret, Clean: true})
		c.Publish("$SYS/broker/x", []byte("1"), 1, 9, packets.Properties{})
		if ack := c.Expect(packets.Puback, wait); ack.ReasonCode != 0x87 {
			t.Fatalf("PUBACK %#x, want 0x87", ack.ReasonCode)
		}
	})
}

// The same with the stock client most people debug with: mosquitto_pub at
// QoS 2 to a refused topic must see a refusal, not a protocol error, and at
// QoS 1 over MQTT 3.1.1 it must complete without being disconnected.
func TestMosquittoPubSeesRefusals(t *testing.T) {
	bin, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("mosquitto_pub not installed: scripts/test.sh installs mosquitto-clients in CI")
		}
		t.Skip("mosquitto_pub not installed (scripts/test.sh installs mosquitto-clients)")
	}
	f := newFleet(t, broker.Config{}, nil)
	host, port, _ := strings.Cut(f.addr, ":")
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-p", port, "-u", "pi-a", "-P", f.a.Secret, "-i", "pi-a/cli", "-d"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	for _, topic := range []string{"chorus/v1/pi-b/bus/speak", "chorus/v1/pi-a/availability"} { // ACL, payload limit
		out, _ := run("-V", "5", "-q", "2", "-t", topic, "-m", `{"type":"speak","data":{"x":"too long for availability"}}`)
		if strings.Contains(out, "protocol error") || !strings.Contains(out, "PUBREC") {
			t.Fatalf("mosquitto_pub QoS 2 refused on %s:\n%s", topic, out)
		}
	}
	out, err := run("-V", "311", "-q", "1", "-t", "chorus/v1/pi-b/bus/speak", "-m", `{"type":"speak"}`)
	if err != nil || !strings.Contains(out, "PUBACK") {
		t.Fatalf("mosquitto_pub MQTT 3.1.1 QoS 1 refused: %v\n%s", err, out)
	}
}
