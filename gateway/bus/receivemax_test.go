package bus_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// The client announces a bounded Receive Maximum in its CONNECT, so neither
// the broker nor paho's inbound queue (sized by it) plans for the
// protocol's 65,535 (docs/benchmarks.md, agent idle RSS).
func TestConnectAnnouncesReceiveMaximum(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan *packets.Connect, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		cp, err := packets.ReadPacket(conn)
		if err != nil {
			close(got)
			return
		}
		c, _ := cp.Content.(*packets.Connect)
		got <- c
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + ln.Addr().String(), Logger: brokertest.Logger(t)})
		done <- err
	}()
	var c *packets.Connect
	select {
	case c = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no CONNECT within 20 s")
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("DialMQTT succeeded against a server that never answered CONNECT")
	}
	if c == nil {
		t.Fatal("the first packet was not a CONNECT")
	}
	if c.Properties == nil || c.Properties.ReceiveMaximum == nil {
		t.Fatal("CONNECT has no Receive Maximum: the protocol's default of 65,535 applies")
	}
	if rm := *c.Properties.ReceiveMaximum; rm == 0 || rm > 1024 {
		t.Errorf("Receive Maximum = %d, want 1..1024", rm)
	}
}
