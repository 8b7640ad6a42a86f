package controller_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/poll"
)

var _ httpapi.Fleet = (*controller.Controller)(nil)

func TestAuthTableFollowsRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	creds := e.addDevice("pi-1", "kitchen")
	a := e.startAgent(creds, 1, "ok")
	poll.Until(t, "pi-1 online", waitFor, func() bool {
		d, err := e.ctl.GetDevice(ctx, "pi-1")
		return err == nil && d.Online
	})
	if !e.ctl.VerifyDevice("pi-1", creds.Password) || e.ctl.VerifyDevice("pi-1", "wrong") {
		t.Fatal("VerifyDevice does not follow the registry")
	}

	if err := e.ctl.RemoveDevice(ctx, "test", "pi-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.c.Done():
	case <-time.After(waitFor):
		t.Fatal("removed device still connected")
	}
	if _, err := brokertest.Connect(t, e.b.Addr(), "pi-1", creds.Password, brokertest.ConnectOptions{ClientID: "again"}); err == nil {
		t.Fatal("removed device could connect again")
	}
	// Its retained topics are cleared (including the Will the broker sent on the revocation).
	time.Sleep(200 * time.Millisecond) // let a Will land, if any, so the watcher would see it
	w := e.watcher("chorus/v1/pi-1/#")
	if m, ok := w.Next(500 * time.Millisecond); ok {
		t.Fatalf("retained %s = %q left after removal", m.Topic, m.Payload)
	}
}

func TestLateWillIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	creds := e.addDevice("pi-1")
	a := e.startAgent(creds, 7, "silent") // silent: its goroutine never publishes, so a.session is the test's alone
	poll.Until(t, "online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })

	a.session = 6 // a Will of the previous connection arriving late
	a.pub("chorus/v1/pi-1/availability", []byte("offline"))
	a.session = 7
	a.pub("chorus/v1/pi-1/connectivity", []byte(`{"network":true}`)) // a marker after the late Will
	poll.Until(t, "connectivity stored", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && len(d.Connectivity) > 0
	})
	if d, _ := e.ctl.GetDevice(ctx, "pi-1"); !d.Online || d.BirthSession != 7 {
		t.Fatalf("late Will applied: online=%v session=%d", d.Online, d.BirthSession)
	}
	a.pub("chorus/v1/pi-1/availability", []byte("offline")) // this session's offline applies
	poll.Until(t, "offline", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && !d.Online })
}

func TestDesiredPublishedRetainedAndAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	creds := e.addDevice("pi-1")
	w := e.watcher("chorus/v1/pi-1/desired")
	w.Expect(t, "chorus/v1/pi-1/desired", waitFor)
	m := e.watcher("chorus/v1/pi-1/desired").Expect(t, "chorus/v1/pi-1/desired", waitFor) // from the retained store
	doc, err := desired.Parse(m.Payload)
	if err != nil || !m.Retain || m.QoS != 1 {
		t.Fatalf("desired: %v retain=%v qos=%d", err, m.Retain, m.QoS)
	}
	_ = creds

	// Restart with the retained document gone: the new controller publishes it again.
	e.stop()
	if err := e.b.Publish(brokerClear("chorus/v1/pi-1/desired")); err != nil {
		t.Fatal(err)
	}
	e.start()
	w2 := e.watcher("chorus/v1/pi-1/desired")
	m2 := w2.Expect(t, "chorus/v1/pi-1/desired", waitFor)
	doc2, err := desired.Parse(m2.Payload)
	if err != nil || doc2.Version != doc.Version {
		t.Fatalf("re-published desired: %v version %d, want %d", err, doc2.Version, doc.Version)
	}
}

func TestPublishSkill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	first := e.publish("hello.test", "1.0.0")
	tests := []struct {
		name    string
		archive []byte
		code    string
		reason  string
	}{
		{"identical again", pack(t, skillDir(t, "hello.test", "1.0.0", "run.sh")), "", ""},
		{"same version other content", pack(t, skillDir(t, "hello.test", "1.0.0", "start.sh")), fleet.ECONFLICT, "already published"},
		{"no exec", pack(t, skillDir(t, "broken.test", "1.0.0", "")), fleet.EINVALID, "no exec"},
		{"no name", pack(t, skillDir(t, "", "1.0.0", "run.sh")), fleet.EINVALID, "declares no name"},
		{"not an archive", []byte("hello"), fleet.EINVALID, "archive refused"},
		{"empty", nil, fleet.EINVALID, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := e.ctl.PublishSkill(ctx, "test", bytes.NewReader(tc.archive))
			if got := fleet.ErrorCode(err); got != tc.code {
				t.Fatalf("code %q (%v), want %q", got, err, tc.code)
			}
			if err != nil && !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %q does not say %q", err, tc.reason)
			}
			if err == nil && (v.SHA256 != first.SHA256 || !v.PublishedAt.Equal(first.PublishedAt)) {
				t.Fatalf("republish changed the version: %+v vs %+v", v, first)
			}
		})
	}
	skills, _ := e.ctl.ListSkills(ctx)
	if len(skills) != 1 {
		t.Fatalf("catalog holds %d skills, want 1 (refused ones change nothing)", len(skills))
	}
}

func TestRolloutCanaryConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	v := e.publish("hello.test", "1.0.0")
	for _, id := range []string{"pi-1", "pi-2", "pi-3"} {
		e.startAgent(e.addDevice(id, "kitchen"), 1, "ok")
	}
	poll.Until(t, "all online", waitFor, func() bool {
		on := true
		ds, _ := e.ctl.ListDevices(ctx, fleet.DeviceFilter{Online: &on})
		return len(ds) == 3
	})
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.TagTarget("kitchen")}, Strategy: fleet.Strategy{Canary: 1, MaxInFlight: 2, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != v.Version {
		t.Fatalf("rollout pinned %q, want latest %q", r.Version, v.Version)
	}
	r = e.waitRollout(r.ID, fleet.RolloutSucceeded)
	_, execs, _ := e.ctl.GetRollout(ctx, r.ID)
	var canary *fleet.Execution
	for _, x := range execs {
		if x.State != fleet.ExecSucceeded || x.Attempts != 1 {
			t.Errorf("execution %s: %s after %d attempts", x.DeviceID, x.State, x.Attempts)
		}
		if x.Canary {
			canary = x
		}
	}
	if canary == nil {
		t.Fatal("no canary")
	}
	for _, x := range execs {
		if !x.Canary && x.StartedAt.Before(canary.FinishedAt) {
			t.Errorf("%s started before the canary %s succeeded", x.DeviceID, canary.DeviceID)
		}
	}

	// A device that joins the tag later gets the tag's skills.
	e.addDevice("pi-4")
	if _, err := e.ctl.SetTags(ctx, "test", "pi-4", []string{"kitchen"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "pi-4 desires hello.test", waitFor, func() bool {
		doc, err := e.ctl.DesiredOf(ctx, "pi-4")
		return err == nil && doc.Skills["hello.test"].Version == "1.0.0"
	})
}

func TestFailureThresholdAborts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	for _, id := range []string{"pi-1", "pi-2", "pi-3", "pi-4"} {
		e.startAgent(e.addDevice(id), 1, "fail")
	}
	poll.Until(t, "all online", waitFor, func() bool {
		on := true
		ds, _ := e.ctl.ListDevices(ctx, fleet.DeviceFilter{Online: &on})
		return len(ds) == 4
	})
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{MaxInFlight: 1, FailureThresholdPct: 50, MinExecuted: 2}})
	if err != nil {
		t.Fatal(err)
	}
	r = e.waitRollout(r.ID, fleet.RolloutAborted)
	if !strings.Contains(r.Reason, "failure threshold") {
		t.Fatalf("reason %q", r.Reason)
	}
	_, execs, _ := e.ctl.GetRollout(ctx, r.ID)
	n := map[fleet.ExecState]int{}
	for _, x := range execs {
		n[x.State]++
		if x.State == fleet.ExecFailed && x.Reason != "exit status 1" {
			t.Errorf("failed %s with reason %q", x.DeviceID, x.Reason)
		}
	}
	if n[fleet.ExecFailed] != 2 || n[fleet.ExecCanceled] != 2 {
		t.Fatalf("executions %v, want 2 failed and 2 canceled", n)
	}
}

func TestCanaryFailureFailsRollout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	e.startAgent(e.addDevice("pi-1"), 1, "fail")
	e.addDevice("pi-2") // offline: not picked as the canary
	poll.Until(t, "pi-1 online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Canary: 1}})
	if err != nil {
		t.Fatal(err)
	}
	r = e.waitRollout(r.ID, fleet.RolloutFailed)
	if x, _ := e.db.GetExecution(ctx, r.ID, "pi-2"); x.State != fleet.ExecCanceled {
		t.Fatalf("pi-2 %s, want canceled after the canary failed", x.State)
	}
}

func TestOfflineDeviceFinishesWhenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	e.startAgent(e.addDevice("pi-1"), 1, "ok")
	late := e.addDevice("pi-2")
	poll.Until(t, "pi-1 online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "pi-1 succeeded", waitFor, func() bool {
		x, err := e.db.GetExecution(ctx, r.ID, "pi-1")
		return err == nil && x.State == fleet.ExecSucceeded
	})
	time.Sleep(200 * time.Millisecond) // several engine ticks
	if x, _ := e.db.GetExecution(ctx, r.ID, "pi-2"); x.State != fleet.ExecQueued {
		t.Fatalf("offline pi-2 is %s, want queued", x.State)
	}
	e.startAgent(late, 1, "ok")
	e.waitRollout(r.ID, fleet.RolloutSucceeded)
}

func TestRestartMidRolloutResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	a1 := e.startAgent(e.addDevice("pi-1"), 1, "silent")
	a2 := e.startAgent(e.addDevice("pi-2"), 1, "silent")
	poll.Until(t, "all online", waitFor, func() bool {
		on := true
		ds, _ := e.ctl.ListDevices(ctx, fleet.DeviceFilter{Online: &on})
		return len(ds) == 2
	})
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{MaxInFlight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "one execution in progress", waitFor, func() bool {
		got, _, _ := e.ctl.GetRollout(ctx, r.ID)
		return got != nil && got.Counts[fleet.ExecInProgress] == 1
	})
	e.stop() // as if killed: nothing is flushed that the store has not already committed
	a1.setMode("ok")
	a2.setMode("ok")
	e.start()
	e.waitRollout(r.ID, fleet.RolloutSucceeded)
	_, execs, _ := e.ctl.GetRollout(ctx, r.ID)
	for _, x := range execs {
		if x.Attempts != 1 {
			t.Errorf("%s started %d times, want once", x.DeviceID, x.Attempts)
		}
	}
}

func TestAbortWithRollback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	e.startAgent(e.addDevice("pi-1"), 1, "ok")
	e.addDevice("pi-2") // offline: stays queued
	poll.Until(t, "pi-1 online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "pi-1 succeeded", waitFor, func() bool {
		x, err := e.db.GetExecution(ctx, r.ID, "pi-1")
		return err == nil && x.State == fleet.ExecSucceeded
	})
	if _, err := e.ctl.AbortRollout(ctx, "test", r.ID, true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "pi-1 no longer desires the skill", waitFor, func() bool {
		doc, err := e.ctl.DesiredOf(ctx, "pi-1")
		_, has := doc.Skills["hello.test"]
		return err == nil && !has
	})
	if _, err := e.ctl.AbortRollout(ctx, "test", r.ID, false); !errors.Is(err, fleet.ErrInvalid) {
		t.Fatalf("second abort: %v, want invalid", err)
	}
}
