package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/connectivity"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// testSkill writes skill id into root: its run.sh runs script, or the test
// binary as the test skill mode when script starts with "mode:".
func testSkill(t *testing.T, root, id, reqs, ready, script string) {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if mode, ok := strings.CutPrefix(script, "mode:"); ok {
		script = `exec "$CHORUS_BIN" ` + testSkillCommand + " " + mode + "\n"
	}
	md := fmt.Sprintf("---\nname: %s\nexec: run.sh\nready: %s\nrequirements: %s\n---\nA test skill.\n", id, ready, reqs)
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// trustFixture is an agent fixture whose skills can run the test binary
// ($CHORUS_BIN, copied where a skill uid can run it) and whose drop-in runs.
func trustFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.cfg.Bin = skillusertest.Executable(t)
	f.cfg.WSListen = "127.0.0.1:0"
	f.cfg.WSServicesConfig = filepath.Join(t.TempDir(), "mycroft", "mycroft.conf")
	f.cfg.Connectivity = configs.Connectivity{CheckInterval: 60, PHALTimeout: 1}
	f.cfg.Logger = testLogger(t)
	return f
}

// connectivityReport waits for the retained connectivity topic matching ok.
func (f *fixture) connectivityReport(t *testing.T, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var c map[string]any
		m := f.obs.Expect(t, "chorus/v1/pi-1/connectivity", time.Until(deadline))
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			t.Fatal(err)
		}
		if ok(c) {
			return c
		}
	}
}

// A skill cannot fake start-up connectivity: its answers to the agent's
// PHAL question (over MQTT and over its own websocket route, copying the
// question's request id) and its unsolicited answers are ignored; the
// internet stays down and the internet-only skill waits (issue 14, finding 3:
// the agent logged internet=true source=phal and loaded it).
func TestSkillCannotFakeConnectivity(t *testing.T) {
	t.Parallel()
	f := trustFixture(t)
	root := f.cfg.Bundled[0]
	testSkill(t, root, "spoofer.skill", "[]", "message", "mode:phal-spoofer")
	testSkill(t, root, "web.skill", "internet", "on-start", "exec sleep 600\n")
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	snap := a.manager.Snapshot()
	if c := snap.Connectivity; c.Internet || c.Source == "phal" {
		t.Errorf("connectivity after start %+v: a skill's PHAL answer was believed", c)
	}
	for _, s := range snap.Skills.Skills {
		if s.ID == "web.skill" && s.State != "waiting" || s.ID == "spoofer.skill" && s.State != "loaded" {
			t.Errorf("%s is %s", s.ID, s.State)
		}
	}
}

// The PHAL plugin, one of the device's OVOS services on their route, is
// believed: a stock-shaped client (URL from the written mycroft.conf, no
// credentials) answering with message.response gives internet=true
// source=phal. The plugin connects after the agent first asked (services
// start next to the agent): the repeated question reaches it.
func TestPHALAnswerFromServicesBelieved(t *testing.T) {
	t.Parallel()
	f := trustFixture(t)
	f.cfg.Connectivity.PHALTimeout = 10 // ends at the answer; bounds a slow CI
	testSkill(t, f.cfg.Bundled[0], "web.skill", "internet", "on-start", "exec sleep 600\n")
	go fakePHAL(t, f.cfg.WSServicesConfig)
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if c := a.manager.Snapshot().Connectivity; !c.Internet || c.Source != "phal" {
		t.Errorf("connectivity after start %+v, want internet from phal", c)
	}
}

// fakePHAL connects as ovos-PHAL-plugin-connectivity-events would and
// answers the question with message.response.
func fakePHAL(t *testing.T, conf string) {
	var ws *websocket.Conn
	err := poll.Wait(context.Background(), "the agent's drop-in to accept the fake PHAL", wait, func() bool {
		if u, err := servicesURL(conf); err == nil {
			ws, _, _ = websocket.DefaultDialer.Dial(u, nil)
		}
		return ws != nil
	})
	if err != nil {
		t.Errorf("fake PHAL: %v", err)
		return
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			return
		}
		m, err := envelope.Decode(b)
		if err != nil || m.Type != connectivity.PHALInternetCheck {
			continue
		}
		reply, _ := m.Response(phalYes)
		out, _ := envelope.Encode(reply)
		_ = ws.WriteMessage(websocket.TextMessage, out)
		return
	}
}

// servicesURL builds ws://host:port+route from mycroft.conf, as
// ovos-bus-client does (BUS.md §3).
func servicesURL(conf string) (string, error) {
	b, err := os.ReadFile(conf)
	if err != nil {
		return "", err
	}
	var c struct {
		Websocket struct {
			Host  string
			Port  int
			Route string
		}
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return "", err
	}
	return fmt.Sprintf("ws://%s:%d%s", c.Websocket.Host, c.Websocket.Port, c.Websocket.Route), nil
}

// A skill on the drop-in has a skill's authority, not the device's: the
// stock route /core refuses it, and what it sends on its own route that the
// broker refuses a skill (deactivating another skill, connectivity events,
// install requests, another skill's readiness) changes nothing (issue 14,
// finding 2: /core relayed all of it with the device's authority).
func TestSkillOnDropInHasSkillAuthority(t *testing.T) {
	t.Parallel()
	f := trustFixture(t)
	f.obs.Sub(t, "chorus/v1/pi-1/bus/+")
	root := f.cfg.Bundled[0]
	testSkill(t, root, "victim.skill", "[]", "on-start", "exec sleep 600\n")
	testSkill(t, root, "attacker.skill", "[]", "message", "mode:ws-attacker")
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	refused := map[string]bool{"skillmanager.deactivate": true, "mycroft.internet.disconnected": true,
		"mycroft.network.disconnected": true, "ovos.skills.install": true}
	core := ""
	for done := false; !done; {
		m, ok := f.obs.Next(wait)
		if !ok {
			t.Fatal("no attacker.done on the bus")
		}
		typ := strings.TrimPrefix(m.Topic, "chorus/v1/pi-1/bus/")
		if refused[typ] {
			t.Errorf("%s from the skill's websocket reached the bus", typ)
		}
		if typ == "attacker.report" {
			core = string(m.Payload)
		}
		done = typ == "attacker.done"
	}
	if !strings.Contains(core, `"core_status":403`) {
		t.Errorf("the stock route /core gave the skill %s, want 403", core)
	}
	for _, s := range a.manager.Snapshot().Skills.Skills {
		if s.ID == "victim.skill" && (s.State != "loaded" || !s.Active) {
			t.Errorf("victim.skill is %s active=%v after the attack", s.State, s.Active)
		}
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// The services' route survives a restart (the secret is persisted), so OVOS
// services keep their mycroft.conf; the file is theirs alone (0600).
func TestServicesRouteSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := trustFixture(t)
	f.cfg.WSListen = "127.0.0.1:0"
	route := func() string {
		a, err := Start(context.Background(), f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		st, err := os.Stat(f.cfg.WSServicesConfig)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("services config: %v (%v), want mode 0600", st, err)
		}
		u, err := servicesURL(f.cfg.WSServicesConfig)
		if err != nil {
			t.Fatal(err)
		}
		return u[strings.LastIndex(u, "/"):]
	}
	if first, second := route(), route(); first != second || len(first) < 40 {
		t.Errorf("routes %q then %q, want one secret route", first, second)
	}
}
