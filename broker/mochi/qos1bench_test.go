// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 Chorus (a benchmark added to mochi-mqtt v2.7.9)

package mqtt

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// rawClient is a minimal MQTT 5 client over TCP for the benchmark: it
// writes pre-encoded packets and reads whole packets, so the profile is the
// broker's, not a client library's.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(tb testing.TB, addr, id string) *rawClient {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	c := &rawClient{conn: conn, r: bufio.NewReader(conn)}
	c.write(tb, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 60, ClientIdentifier: id}})
	if fh, _ := c.read(tb); fh.Type != packets.Connack {
		tb.Fatalf("%s: want CONNACK, got packet type %d", id, fh.Type)
	}
	return c
}

func (c *rawClient) write(tb testing.TB, pk packets.Packet) {
	tb.Helper()
	buf := new(bytes.Buffer)
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	}
	if err != nil {
		tb.Fatalf("encode packet type %d: %v", pk.FixedHeader.Type, err)
	}
	if _, err := c.conn.Write(buf.Bytes()); err != nil {
		tb.Fatalf("write packet type %d: %v", pk.FixedHeader.Type, err)
	}
}

// read returns the next packet's fixed header and its remaining bytes.
func (c *rawClient) read(tb testing.TB) (packets.FixedHeader, []byte) {
	var fh packets.FixedHeader
	b, err := c.r.ReadByte()
	if err == nil {
		err = fh.Decode(b)
	}
	if err == nil {
		fh.Remaining, _, err = packets.DecodeLength(c.r)
	}
	rest := make([]byte, fh.Remaining)
	if err == nil {
		_, err = io.ReadFull(c.r, rest)
	}
	if err != nil {
		tb.Errorf("read a packet: %v", err)
	}
	return fh, rest
}

// BenchmarkQos1FanOut1 is `chorus bench broker`'s QoS 1 fan-out 1 load on
// bare mochi over loopback TCP: 4 publishers, each waiting for its PUBACK
// before the next publish, one subscriber acknowledging every delivery, a
// 64-byte payload. One op is one message published and delivered (PUBLISH
// in, PUBACK out, PUBLISH out, PUBACK in).
func BenchmarkQos1FanOut1(b *testing.B) {
	caps := NewDefaultServerCapabilities()
	caps.MaximumMessageExpiryInterval = 0
	// A publisher has its PUBACK before the message is delivered, so a
	// subscriber slowed down by a profiler falls behind: bounds that a run
	// cannot reach keep it connected (the path measured is the same).
	caps.MaximumClientWritesPending = 1 << 20
	caps.MaximumInflight = 65535
	caps.DisconnectSlowClients = true
	s := New(&Options{Logger: logger, Capabilities: caps})
	_ = s.AddHook(new(AllowHook), nil)
	ln := listeners.NewTCP(listeners.Config{ID: "bench", Address: "127.0.0.1:0"})
	if err := s.AddListener(ln); err != nil {
		b.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	const topic = "chorus/v1/benchdev/bus/bench"
	sub := dialRaw(b, ln.Address(), "sub")
	defer sub.conn.Close()
	sub.write(b, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5,
		PacketID: 1, Filters: packets.Subscriptions{{Filter: topic, Qos: 1}}})
	if fh, _ := sub.read(b); fh.Type != packets.Suback {
		b.Fatalf("want SUBACK, got packet type %d", fh.Type)
	}

	const publishers = 4
	pubs := make([]*rawClient, publishers)
	for i := range pubs {
		pubs[i] = dialRaw(b, ln.Address(), "pub"+string(rune('0'+i)))
		defer pubs[i].conn.Close()
	}
	payload := bytes.Repeat([]byte("x"), 64)

	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the subscriber: acknowledge every delivery
		defer wg.Done()
		ack := []byte{packets.Puback << 4, 2, 0, 0}
		for i := 0; i < b.N; i++ {
			fh, rest := sub.read(b)
			if fh.Type != packets.Publish || len(rest) < 2+len(topic)+2 {
				b.Errorf("want a QoS 1 PUBLISH, got packet type %d", fh.Type)
				return
			}
			copy(ack[2:], rest[2+len(topic):2+len(topic)+2]) // the packet id
			if _, err := sub.conn.Write(ack); err != nil {
				b.Errorf("write PUBACK: %v", err)
				return
			}
		}
	}()
	for i, c := range pubs {
		n := b.N / publishers
		if i == 0 {
			n += b.N % publishers
		}
		wg.Add(1)
		go func(c *rawClient, n int) {
			defer wg.Done()
			buf := new(bytes.Buffer)
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, ProtocolVersion: 5,
				TopicName: topic, Payload: payload}
			for k := 0; k < n; k++ {
				pk.PacketID = uint16(k%65535 + 1)
				buf.Reset()
				_ = pk.PublishEncode(buf)
				if _, err := c.conn.Write(buf.Bytes()); err != nil {
					b.Errorf("publish: %v", err)
					return
				}
				if fh, _ := c.read(b); fh.Type != packets.Puback {
					b.Errorf("want PUBACK, got packet type %d", fh.Type)
					return
				}
			}
		}(c, n)
	}
	wg.Wait()
	b.StopTimer()
	// Every delivery was acknowledged: nothing is left in flight.
	for deadline := time.Now().Add(10 * time.Second); atomic.LoadInt64(&s.Info.Inflight) > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := atomic.LoadInt64(&s.Info.Inflight); n != 0 {
		b.Errorf("%d messages left in flight", n)
	}
}
