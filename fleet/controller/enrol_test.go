package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// pendingJoin creates a one-use join token and joins device with it; it
// returns the entry and its poll secret.
func pendingJoin(t *testing.T, e *env, device string) (*fleet.PendingDevice, string) {
	t.Helper()
	ctx := context.Background()
	tok, err := e.ctl.CreateJoinToken(ctx, "test", nil, 1, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := e.ctl.Join(ctx, "198.18.0.2", tok.Token.ID, tok.Secret, device)
	if err != nil || jr.Pending == nil {
		t.Fatalf("join: %+v, %v", jr, err)
	}
	return jr.Pending, jr.PollSecret
}

// collect polls an accepted entry and returns its credentials.
func collect(t *testing.T, e *env, p *fleet.PendingDevice, secret string) configs.AgentCredentials {
	t.Helper()
	r, err := e.ctl.PollJoin(context.Background(), p.ID, secret)
	if err != nil || r.Credentials == nil {
		t.Fatalf("poll after accept: %+v, %v", r, err)
	}
	return *r.Credentials
}

// canConnect reports whether the broker takes creds.
func canConnect(t *testing.T, e *env, creds configs.AgentCredentials) bool {
	t.Helper()
	c, err := brokertest.Connect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: creds.Device})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// A reply lost on its way to the agent does not strand it: polling again
// within the window gives fresh credentials, and only the latest work. Once
// the device has been heard from, or the window has passed, the entry is
// over.
func TestJoinRecollect(t *testing.T) {
	t.Parallel()
	clock := &jumpClock{}
	e := newClockEnv(t, clock)
	ctx := context.Background()

	p, secret := pendingJoin(t, e, "pi-lost")
	if _, err := e.ctl.AcceptPending(ctx, "test", p.ID); err != nil {
		t.Fatal(err)
	}
	first := collect(t, e, p, secret) // the reply that was lost
	if ps, err := e.ctl.ListPending(ctx); err != nil || len(ps) != 0 {
		t.Errorf("a collected entry is still listed as waiting: %+v, %v", ps, err)
	}
	second := collect(t, e, p, secret)
	if first.Password == second.Password {
		t.Fatal("the second collection returned the same secret")
	}
	if canConnect(t, e, first) {
		t.Error("the first collection's credentials still work after the second")
	}
	if !canConnect(t, e, second) {
		t.Fatal("the latest credentials are refused")
	}
	// The device has now been heard from (it connected, and its agent says
	// online): a third collection would knock it out.
	a := e.startAgent(second, 1, "ok")
	poll.Until(t, "the device online", waitFor, func() bool {
		d, err := e.ctl.GetDevice(ctx, "pi-lost")
		return err == nil && d.Online
	})
	if _, err := e.ctl.PollJoin(ctx, p.ID, secret); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("poll after the device was heard from: %v, want ENOTFOUND", err)
	}
	a.close()

	// Never used, but the window has passed.
	q, qsecret := pendingJoin(t, e, "pi-late")
	if _, err := e.ctl.AcceptPending(ctx, "test", q.ID); err != nil {
		t.Fatal(err)
	}
	collect(t, e, q, qsecret)
	clock.Jump(controller.RecollectWindow + time.Minute)
	if _, err := e.ctl.PollJoin(ctx, q.ID, qsecret); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("poll after the window: %v, want ENOTFOUND", err)
	}
	if _, err := e.db.GetPending(ctx, q.ID); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("the entry outlived its window: %v", err)
	}
}

// Concurrent polls of one accepted entry are serialised: each answer is a
// full collection and the last one's credentials are the ones that work.
// An accept racing a reject ends with either a device and its accepted
// entry, or neither: never a device nobody can collect.
func TestJoinRaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	p, secret := pendingJoin(t, e, "pi-twice")
	if _, err := e.ctl.AcceptPending(ctx, "test", p.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]configs.AgentCredentials, 4)
	for i := range got {
		wg.Go(func() {
			r, err := e.ctl.PollJoin(ctx, p.ID, secret)
			if err != nil || r.Credentials == nil {
				t.Errorf("concurrent poll %d: %+v, %v", i, r, err)
				return
			}
			got[i] = *r.Credentials
		})
	}
	wg.Wait()
	working := 0
	for _, c := range got {
		if c.Password != "" && canConnect(t, e, c) {
			working++
		}
	}
	if working != 1 {
		t.Errorf("%d of the concurrent collections' credentials work, want exactly 1 (the last)", working)
	}

	for i := range 10 {
		q, _ := pendingJoin(t, e, "pi-race"+string(rune('a'+i)))
		var aerr, rerr error
		wg.Go(func() { _, aerr = e.ctl.AcceptPending(ctx, "test", q.ID) })
		wg.Go(func() { rerr = e.ctl.RejectPending(ctx, "test", q.ID) })
		wg.Wait()
		_, derr := e.ctl.GetDevice(ctx, q.DeviceID)
		entry, perr := e.db.GetPending(ctx, q.ID)
		switch {
		case aerr == nil && derr == nil && perr == nil && entry.Accepted:
			if rerr == nil {
				t.Errorf("race %d: both accept and reject succeeded", i)
			}
		case rerr == nil && fleet.ErrorCode(derr) == fleet.ENOTFOUND && fleet.ErrorCode(perr) == fleet.ENOTFOUND:
			if aerr == nil {
				t.Errorf("race %d: both reject and accept succeeded", i)
			}
		default:
			t.Errorf("race %d: accept %v, reject %v: device %v, entry %+v %v", i, aerr, rerr, derr, entry, perr)
		}
	}
}
