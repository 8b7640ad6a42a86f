package broker_test

import (
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// Connected follows the account's live connections and NotifyDisconnect
// says when one closes: the controller ties presence to them.
func TestConnectedAndNotifyDisconnect(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	gone := make(chan string, 4)
	b.NotifyDisconnect(func(u string) { gone <- u })
	if b.Connected("pi") {
		t.Fatal("Connected before any connection")
	}
	c := brokertest.MustConnect(t, b.Addr(), "pi", dev.Secret, brokertest.ConnectOptions{ClientID: "pi"})
	if !b.Connected("pi") {
		t.Fatal("not Connected with a live connection")
	}
	if b.Connected("other") {
		t.Fatal("an account without connections is Connected")
	}
	c.Close()
	select {
	case u := <-gone:
		if u != "pi" {
			t.Fatalf("NotifyDisconnect(%q), want pi", u)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no NotifyDisconnect within 20s")
	}
	if b.Connected("pi") {
		t.Fatal("Connected after the connection closed")
	}
}
