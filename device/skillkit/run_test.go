package skillkit_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/skillcred"
	"github.com/chorus-edge/chorus/gateway/topic"
)

const (
	device = "pi-kitchen"
	skill  = "test.skill"
	wait   = 10 * time.Second
)

// rig is a real broker with the device's agent connected to its bus, and
// the environment the agent would give skill.
type rig struct {
	agent *brokertest.Client
	env   map[string]string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dev := brokertest.NewDevice(t, device)
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	agent := brokertest.MustConnect(t, b.Addr(), device, dev.Secret, brokertest.ConnectOptions{ClientID: "agent", CleanStart: true})
	filter, _ := topic.BusFilter(device)
	agent.Sub(t, filter)
	prefix, _ := topic.BusPrefix(device)
	return &rig{agent: agent, env: map[string]string{
		"CHORUS_MQTT_URL":   b.URL(),
		"CHORUS_USERNAME":   skillcred.Username(device, skill),
		"CHORUS_PASSWORD":   skillcred.Mint(dev.Key, 1, device, skill),
		"CHORUS_DEVICE":     device,
		"CHORUS_SKILL_ID":   skill,
		"CHORUS_BUS_PREFIX": prefix,
		"CHORUS_SETTINGS":   filepath.Join(t.TempDir(), skill, "settings.json"),
	}}
}

func (r *rig) config() skillkit.Config {
	return skillkit.Config{Getenv: getenv(r.env), Logger: slog.New(slog.DiscardHandler), ConnectTimeout: wait}
}

// run starts RunConfig on its own goroutine and returns its result channel
// and the cancel that stops it.
func (r *rig) run(t *testing.T, setup func(*skillkit.Skill) error) (<-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- skillkit.RunConfig(ctx, r.config(), setup)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return done, cancel
}

func (r *rig) publish(t *testing.T, m envelope.Message) {
	t.Helper()
	name, _ := topic.Bus(device, m.Type)
	b, err := envelope.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if rc := r.agent.Pub(t, name, b, false); rc != 0 {
		t.Fatalf("publish %s: reason 0x%02x", name, rc)
	}
}

func (r *rig) expect(t *testing.T, msgType string) envelope.Message {
	t.Helper()
	name, _ := topic.Bus(device, msgType)
	m, err := envelope.Decode(r.agent.Expect(t, name, wait).Payload)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Fatal("RunConfig did not return")
		return nil
	}
}

func TestRunAnnouncesReadyAfterSetupAndStops(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	skills := make(chan *skillkit.Skill, 1)
	done, cancel := r.run(t, func(s *skillkit.Skill) error {
		skills <- s
		return nil
	})
	got := <-skills
	ready := r.expect(t, skillkit.TypeReady)
	if ready.Data["skill_id"] != skill {
		t.Errorf("ready = %v, want skill_id %s", ready.Data, skill)
	}
	if got.ID() != skill || got.Device() != device || got.Bus() == nil || got.Logger() == nil {
		t.Errorf("skill = id %q device %q", got.ID(), got.Device())
	}
	cancel()
	if err := waitErr(t, done); err != nil {
		t.Errorf("RunConfig after cancel = %v, want nil", err)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	errSetup := errors.New("boom")
	tests := []struct {
		name   string
		change map[string]string
		setup  func(*skillkit.Skill) error
		want   string
	}{
		{name: "setup fails", setup: func(*skillkit.Skill) error { return errSetup }, want: "setup: boom"},
		{name: "missing env", change: map[string]string{"CHORUS_DEVICE": ""}, want: "missing CHORUS_DEVICE"},
		{name: "bad credentials", change: map[string]string{"CHORUS_PASSWORD": "v1.bad"}, want: "connect to the bus"},
		{name: "other skill's credentials", change: map[string]string{"CHORUS_USERNAME": skillcred.Username(device, "other.skill")}, want: "connect to the bus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			for k, v := range tt.change {
				r.env[k] = v
			}
			setup := tt.setup
			if setup == nil {
				setup = func(*skillkit.Skill) error { return nil }
			}
			done, _ := r.run(t, setup)
			err := waitErr(t, done)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RunConfig = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOnSettingsChangedFiltersBySkill(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	changed := make(chan struct{}, 8)
	r.run(t, func(s *skillkit.Skill) error {
		_, err := s.OnSettingsChanged(func() { changed <- struct{}{} })
		return err
	})
	r.expect(t, skillkit.TypeReady)
	r.publish(t, envelope.New(skillkit.TypeSettingsChanged, map[string]any{"skill_id": "other.skill"}))
	r.publish(t, envelope.New(skillkit.TypeSettingsChanged, map[string]any{"skill_id": skill}))
	select {
	case <-changed:
	case <-time.After(wait):
		t.Fatal("OnSettingsChanged not called for the skill's own id")
	}
	// The bus delivers in order to one handler: had the other skill's event
	// called f, it would have come first; check nothing else is queued.
	select {
	case <-changed:
		t.Error("OnSettingsChanged called for another skill")
	default:
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content *string // nil = no file
		noPath  bool
		want    string // JSON of the map; "" = error expected
	}{
		{name: "no path", noPath: true, want: `{}`},
		{name: "missing file", want: `{}`},
		{name: "object", content: ptr(`{"units":"metric","n":2}`), want: `{"n":2,"units":"metric"}`},
		{name: "null", content: ptr(`null`), want: `{}`},
		{name: "not an object", content: ptr(`[1]`)},
		{name: "broken", content: ptr(`{"units":`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			if tt.noPath {
				r.env["CHORUS_SETTINGS"] = ""
			}
			if tt.content != nil {
				p := r.env["CHORUS_SETTINGS"]
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			type result struct {
				m   map[string]any
				err error
			}
			res := make(chan result, 1)
			r.run(t, func(s *skillkit.Skill) error {
				m, err := s.Settings()
				res <- result{m, err}
				return nil
			})
			got := <-res
			if tt.want == "" {
				if got.err == nil {
					t.Errorf("Settings = %v, want an error", got.m)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("Settings: %v", got.err)
			}
			if s := mustJSON(t, got.m); s != tt.want {
				t.Errorf("Settings = %s, want %s", s, tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
