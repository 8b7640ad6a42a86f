package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const waitFor = 30 * time.Second // generous: a loaded 2-core CI machine under -race; a wait that succeeds returns at once

// validateSkill is the wiring cmd/chorus uses: the agent's discovery rules
// over the unpacked skill directory, insisting on a declared name.
func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description,
		Requirements: s.Requirements}, nil
}

// env is one gateway under test: a real broker, a real SQLite file, a controller.
type env struct {
	t        *testing.T
	b        *broker.Broker
	dbPath   string
	db       *sqlite.DB
	ctl      *controller.Controller
	dir      string
	opName   string
	opSecret string
	local    []broker.Account
	now      func() time.Time // the wall clock of store and controller (nil = time.Now)
	// grace, when set, ties presence to the broker's live connections with
	// this PresenceGrace (liveness.go).
	grace time.Duration
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.b = brokertest.Start(t, broker.Config{})
	acct, secret := brokertest.NewOperator(t, "watcher")
	e.opName, e.opSecret, e.local = acct.Username, secret, []broker.Account{acct}
	e.dbPath = filepath.Join(e.dir, "fleet.db")
	e.start()
	return e
}

// start opens the store and starts a controller on it.
func (e *env) start() {
	e.t.Helper()
	db, err := sqlite.Open(e.dbPath, e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := controller.Config{
		Store: db, Broker: e.b, LocalAccounts: e.local, ArtifactDir: filepath.Join(e.dir, "artifacts"),
		ValidateSkill: validateSkill, MQTTURL: e.b.URL(), ServerURL: "http://127.0.0.1:0",
		Logger: brokertest.Logger(e.t), Tick: 50 * time.Millisecond, RepublishAge: 500 * time.Millisecond, Now: e.now,
	}
	if e.grace > 0 {
		cfg.Connections, cfg.PresenceGrace = e.b, e.grace
	}
	ctl, err := controller.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.db, e.ctl = db, ctl
	e.t.Cleanup(e.stop)
}

// stop closes the controller and the store (idempotent).
func (e *env) stop() {
	if e.ctl != nil {
		e.ctl.Close()
		e.db.Close()
		e.ctl, e.db = nil, nil
	}
}

func (e *env) addDevice(id string, tags ...string) configs.AgentCredentials {
	e.t.Helper()
	_, creds, err := e.ctl.AddDevice(context.Background(), "test", id, tags)
	if err != nil {
		e.t.Fatalf("add device %s: %v", id, err)
	}
	return creds
}

// watcher connects the local operator account.
func (e *env) watcher(filter string) *brokertest.Client {
	e.t.Helper()
	c := brokertest.MustConnect(e.t, e.b.Addr(), e.opName, e.opSecret, brokertest.ConnectOptions{ClientID: "watcher-" + strconv.Itoa(int(time.Now().UnixNano()%1e6))})
	c.Sub(e.t, filter)
	return c
}

// skillDir writes a skill directory; exec "" leaves the exec out (invalid).
func skillDir(t *testing.T, name, version, exec string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "---\n"
	if name != "" {
		doc += "name: " + name + "\n"
	}
	doc += "description: A test skill that says " + name + ".\nversion: " + version + "\n"
	if exec != "" {
		doc += "exec: " + exec + "\n"
		if err := os.WriteFile(filepath.Join(dir, exec), []byte("#!/bin/sh\necho "+version+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	doc += "---\n# " + name + "\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func pack(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := artifact.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (e *env) publish(name, version string) *fleet.SkillVersion {
	e.t.Helper()
	v, err := e.ctl.PublishSkill(context.Background(), "test", bytes.NewReader(pack(e.t, skillDir(e.t, name, version, "run.sh"))))
	if err != nil {
		e.t.Fatalf("publish %s %s: %v", name, version, err)
	}
	return v
}

// agent simulates a device agent: it connects with the device's
// credentials, announces itself like the real agent (availability with the
// session user property, birth) and answers each desired document with a
// skills report, as its mode says.
type agent struct {
	t       *testing.T
	id      string
	c       *brokertest.Client
	session uint64

	mu   sync.Mutex
	mode string // "ok" (install → loaded), "fail" (→ failed), "waiting" (→ waiting for internet), "silent"
	last desired.Doc
	stop chan struct{}
	done chan struct{}
}

func (e *env) startAgent(creds configs.AgentCredentials, session uint64, mode string) *agent {
	e.t.Helper()
	a := &agent{t: e.t, id: creds.Device, session: session, mode: mode, stop: make(chan struct{}), done: make(chan struct{})}
	avail := "chorus/v1/" + a.id + "/availability"
	a.c = brokertest.MustConnect(e.t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{
		ClientID:  a.id,
		Will:      &paho.WillMessage{Topic: avail, Payload: []byte("offline"), QoS: 1, Retain: true},
		WillProps: &paho.WillProperties{User: paho.UserProperties{{Key: "session", Value: strconv.FormatUint(session, 10)}}},
	})
	a.pub(avail, []byte("online"))
	birth, _ := json.Marshal(map[string]any{"session": session, "agent_version": "test"})
	a.pub("chorus/v1/"+a.id+"/birth", birth)
	a.c.Sub(e.t, "chorus/v1/"+a.id+"/desired")
	go a.run()
	e.t.Cleanup(a.close)
	return a
}

func (a *agent) pub(topic string, payload []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = a.c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: payload,
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: strconv.FormatUint(a.session, 10)}}}})
}

func (a *agent) setMode(m string) {
	a.mu.Lock()
	a.mode = m
	doc := a.last
	a.mu.Unlock()
	a.answer(doc)
}

func (a *agent) run() {
	defer close(a.done)
	for {
		select {
		case <-a.stop:
			return
		default:
		}
		m, ok := a.c.Next(50 * time.Millisecond)
		if !ok || len(m.Payload) == 0 {
			continue
		}
		doc, err := desired.Parse(m.Payload)
		if err != nil {
			a.t.Errorf("agent %s: bad desired document: %v", a.id, err)
			continue
		}
		a.mu.Lock()
		a.last = doc
		a.mu.Unlock()
		a.answer(doc)
	}
}

// answer publishes the skills report for doc according to the mode.
func (a *agent) answer(doc desired.Doc) {
	a.mu.Lock()
	mode := a.mode
	a.mu.Unlock()
	if mode == "silent" || doc.Version == 0 {
		return
	}
	state, errText, waitingFor := "loaded", "", []string{}
	switch mode {
	case "fail":
		state, errText = "failed", "exit status 1"
	case "waiting":
		state, waitingFor = "waiting", []string{"internet"}
	}
	skills := []map[string]any{}
	for _, id := range doc.IDs() {
		skills = append(skills, map[string]any{"id": id, "version": doc.Skills[id].Version, "state": state,
			"managed": true, "error": errText, "waiting_for": waitingFor})
	}
	b, _ := json.Marshal(map[string]any{"applied_version": doc.Version, "skills": skills})
	a.pub("chorus/v1/"+a.id+"/skills", b)
}

func (a *agent) close() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
		<-a.done
		a.c.Close()
	}
}

// rolloutState waits for a rollout to reach state.
func (e *env) waitRollout(id int64, state fleet.RolloutState) *fleet.Rollout {
	e.t.Helper()
	var r *fleet.Rollout
	poll.Until(e.t, fmt.Sprintf("rollout %d %s", id, state), waitFor, func() bool {
		var err error
		r, _, err = e.ctl.GetRollout(context.Background(), id)
		return err == nil && r.State == state
	})
	return r
}

func brokerClear(topic string) broker.Message {
	return broker.Message{Topic: topic, QoS: 1, Retain: true}
}
