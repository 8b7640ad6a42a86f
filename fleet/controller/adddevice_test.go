package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// commitFailStore is the real store whose CreateDevice fails as SQLite does
// when COMMIT hits a full disk: stored says whether the row reached the
// database anyway (the outcome SQLite cannot confirm).
type commitFailStore struct {
	controller.Store
	stored   bool
	readFail atomic.Bool // the read-back fails too (flipped while the controller runs)
}

func (s *commitFailStore) GetDevice(ctx context.Context, id string) (*fleet.Device, error) {
	if s.readFail.Load() {
		return nil, errors.Join(fleet.Errorf(fleet.EUNAVAILABLE, "the fleet database could not be read"), errCommit)
	}
	return s.Store.GetDevice(ctx, id)
}

var errCommit = errors.New("fleet db: commit write: disk I/O error")

func (s *commitFailStore) CreateDevice(ctx context.Context, d *fleet.Device) error {
	if s.stored {
		if err := s.Store.CreateDevice(ctx, d); err != nil {
			return err
		}
	}
	return errors.Join(fleet.Errorf(fleet.EUNAVAILABLE, "the fleet database could not confirm the change; it may or may not have been applied"), errCommit)
}

// TestAddDeviceFullDisk: POST /v1/devices may answer "nothing changed" only
// when nothing was stored; a device stored although the commit reported a
// failure is answered with its credentials, which work (issue 16 §7).
func TestAddDeviceFullDisk(t *testing.T) {
	for _, stored := range []bool{true, false} {
		name := map[bool]string{true: "stored at a failed commit", false: "not stored"}[stored]
		t.Run(name, func(t *testing.T) {
			cs := &commitFailStore{stored: stored}
			e, _ := newIntegEnvWith(t, integOptions{store: func(s controller.Store) controller.Store { cs.Store = s; return cs }})
			_, creds, err := e.ctl.AddDevice(context.Background(), "test", "pi-1", nil)
			_, gerr := e.ctl.GetDevice(context.Background(), "pi-1")
			if !stored {
				if fleet.ErrorCode(err) != fleet.EUNAVAILABLE || !strings.Contains(fleet.ErrorMessage(err), "nothing changed") {
					t.Fatalf("AddDevice = %v, want unavailable saying nothing changed", err)
				}
				if fleet.ErrorCode(gerr) != fleet.ENOTFOUND {
					t.Fatalf("device after the refusal: %v, want not found", gerr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AddDevice of a stored device = %v: its one-time secret is lost", err)
			}
			if gerr != nil {
				t.Fatal(gerr)
			}
			c := brokertest.MustConnect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: "pi-1"})
			c.Close()
		})
	}
}

// TestAddDeviceOutcomeUnknown: when neither the commit nor a read-back can
// say whether the device was stored, AddDevice fails (unavailable, "may or
// may not") and still returns the credentials, which work once the device
// turns out to exist: its one-time secret is not lost (issue 16 §7).
func TestAddDeviceOutcomeUnknown(t *testing.T) {
	cs := &commitFailStore{stored: true}
	cs.readFail.Store(true)
	e, _ := newIntegEnvWith(t, integOptions{store: func(s controller.Store) controller.Store { cs.Store = s; return cs }})
	_, creds, err := e.ctl.AddDevice(context.Background(), "test", "pi-1", nil)
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE || !strings.Contains(fleet.ErrorMessage(err), "may or may not") {
		t.Fatalf("AddDevice = %v, want unavailable saying the outcome is unknown", err)
	}
	if creds.Password == "" || creds.Device != "pi-1" {
		t.Fatalf("no credentials with the unknown outcome: %+v", creds)
	}
	cs.readFail.Store(false)
	if _, err := e.ctl.GetDevice(context.Background(), "pi-1"); err != nil {
		t.Fatal(err)
	}
	e.ctl.Kick()
	poll.Until(t, "the returned credentials log in", waitFor, func() bool {
		c, err := brokertest.Connect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: "pi-1"})
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
