package controller_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// takeUntil drains the feed until want is among its subjects.
func takeUntil(t *testing.T, f interface {
	Wake() <-chan struct{}
	Take() ([]string, bool)
}, want string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case <-f.Wake():
			subjects, all := f.Take()
			if all || slices.Contains(subjects, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no change of %s within %s", want, waitFor)
		}
	}
}

// The change feed names the device when its presence changes, the rollout
// when its executions move, and every audited subject; a feed ended by its
// cancel hears nothing more.
func TestChangesFeed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	f, cancel := e.ctl.SubscribeChanges()
	creds := e.addDevice("pi-1", "kitchen")
	takeUntil(t, f, "device/pi-1") // device.add is audited

	a := e.startAgent(creds, 3, "ok")
	takeUntil(t, f, "device/pi-1")
	a.pub("chorus/v1/pi-1/birth", []byte(`{"session":3,"agent_version":"test","hostname":"pi","arch":"arm64","isolation":"uid"}`))
	poll.Until(t, "birth details", waitFor, func() bool {
		b, ok := e.ctl.Birth("pi-1")
		return ok && b == controller.BirthInfo{Hostname: "pi", Arch: "arm64", Isolation: "uid"}
	})

	e.publish("feed.hello", "1.0.0")
	r, err := e.ctl.CreateRollout(ctx, "operator", &fleet.Rollout{SkillID: "feed.hello", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("pi-1")}})
	if err != nil {
		t.Fatal(err)
	}
	takeUntil(t, f, "rollout/"+strconv.FormatInt(r.ID, 10))
	e.waitRollout(r.ID, fleet.RolloutSucceeded)
	takeUntil(t, f, "rollout/"+strconv.FormatInt(r.ID, 10))

	f.Take()
	a.pub("chorus/v1/pi-1/availability", []byte("offline"))
	takeUntil(t, f, "device/pi-1")

	cancel()
	f.Take()
	if err := e.ctl.RemoveDevice(ctx, "operator", "pi-1"); err != nil {
		t.Fatal(err)
	}
	if s, all := f.Take(); len(s) > 0 || all {
		t.Fatalf("ended feed heard %v %v", s, all)
	}
	if _, ok := e.ctl.Birth("pi-1"); ok {
		t.Fatal("a removed device's birth details are kept")
	}
}
