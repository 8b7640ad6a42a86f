package broker_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

func withPrefix(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// A QoS 1 message queued for an offline persistent session is in flight; it
// must survive a restart and be delivered when the session resumes, and be
// forgotten once acknowledged.
func TestInflightSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{DataDir: dir}, dev.Account, op)
	addr := b.Addr()

	sess := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1", Expiry: 3600})
	sess.Sub(t, "chorus/v1/pi-1/bus/+")
	sess.Close()
	opc := brokertest.MustConnect(t, addr, "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "op"})
	opc.Pub(t, "chorus/v1/pi-1/bus/hello", []byte(`{"type":"hello"}`), false)
	opc.Close()
	b.Close()
	if got := withPrefix(broker.StoredKeys(t, dir), "IFM_pi-1:"); len(got) != 1 {
		t.Fatalf("stored in-flight rows of pi-1 = %q, want one", got)
	}

	b2 := brokertest.Start(t, broker.Config{DataDir: dir, MQTTListen: addr}, dev.Account, op)
	again := brokertest.MustConnect(t, b2.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1", Expiry: 3600})
	if !again.Connack.SessionPresent {
		t.Fatal("session not present after restart")
	}
	if m := again.Expect(t, "chorus/v1/pi-1/bus/hello", wait); string(m.Payload) != `{"type":"hello"}` {
		t.Fatalf("payload = %q", m.Payload)
	}
	// paho sends the PUBACK after its handler returns; wait until mochi has it.
	poll.Until(t, "no inflight messages for pi-1", wait, func() bool { return b2.Inflight("pi-1") == 0 })
	again.Close()
	b2.Close()
	if got := withPrefix(broker.StoredKeys(t, dir), "IFM_"); len(got) != 0 {
		t.Fatalf("in-flight rows after the ack = %q, want none", got)
	}
}

// A clean session cannot be resumed after a restart: neither its client
// record, its subscriptions nor its in-flight deliveries are stored, and a
// client id that switches from a persistent to a clean session loses its
// stored record. Persistent sessions are stored as before.
func TestCleanSessionNotStored(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{DataDir: dir}, dev.Account, op)
	addr := b.Addr()

	keep := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/keep", Expiry: 3600})
	keep.Sub(t, "chorus/v1/pi-1/bus/+")
	flip := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/flip", Expiry: 3600})
	flip.Close()
	flip = brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/flip", CleanStart: true})
	watch := brokertest.MustConnect(t, addr, "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "watch"})
	watch.Sub(t, "chorus/v1/pi-1/bus/+")
	pub := brokertest.MustConnect(t, addr, "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "pub"})
	for range 20 {
		pub.Pub(t, "chorus/v1/pi-1/bus/hello", []byte(`{"type":"hello"}`), false)
	}
	for range 20 {
		watch.Expect(t, "chorus/v1/pi-1/bus/hello", wait)
		keep.Expect(t, "chorus/v1/pi-1/bus/hello", wait)
	}
	b.Close()

	keys := broker.StoredKeys(t, dir)
	for _, want := range []string{"CL_pi-1/keep", "SUB_pi-1/keep:chorus/v1/pi-1/bus/+"} {
		if !slices.Contains(keys, want) {
			t.Errorf("%s not stored; keys %q", want, keys)
		}
	}
	for _, id := range []string{"pi-1/flip", "operator:alice/watch", "operator:alice/pub"} {
		for _, k := range keys {
			if strings.HasPrefix(k, "CL_"+id) || strings.HasPrefix(k, "SUB_"+id+":") || strings.HasPrefix(k, "IFM_"+id+":") {
				t.Errorf("clean session %s stored %s", id, k)
			}
		}
	}
}
