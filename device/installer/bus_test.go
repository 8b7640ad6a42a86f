package installer

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/desired"
)

// The installer's events reach the device bus through a real broker, under
// the device's own credentials (its ACL lets the agent emit them).
func TestEventsOnRealBus(t *testing.T) {
	dev := brokertest.NewDevice(t, testDevice)
	op, opSecret := brokertest.NewOperator(t, "tester")
	brk := brokertest.Start(t, broker.Config{}, dev.Account, op)
	agentBus := dialBus(t, brk.URL(), testDevice, dev.Secret)
	observer := dialBus(t, brk.URL(), "operator:tester", opSecret)
	got := make(chan bus.Delivery, 4)
	off, err := observer.On(TypeInstallComplete, func(_ context.Context, d bus.Delivery) { got <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer off()

	e := newEnv(t, func(c *Config) { c.Bus = agentBus })
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	if err := e.apply(1, map[string]desired.Skill{"hello": a.skill("1.0.0")}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.Device != testDevice || d.Message.Data["skill_id"] != "hello" || d.Message.Data["version"] != "1.0.0" {
			t.Fatalf("delivery %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no install.complete on the bus")
	}
}

func dialBus(t *testing.T, url, user, pass string) *bus.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: url, Username: user, Password: pass, Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c, err := bus.New(bus.Config{Transport: tr, Device: testDevice, Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); tr.Close() })
	return c
}
