//go:build !chorus_agent

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/poll"
)

type skillsTopic struct {
	ManifestDigest string `json:"manifest_digest"`
	Skills         []struct {
		ID, State, Error string
	} `json:"skills"`
}

// waitSkills reads the retained skills topic until cond holds.
func waitSkills(t *testing.T, c *brokertest.Client, device string, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := map[string]string{}
	for time.Now().Before(deadline) {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			break
		}
		if m.Topic != "chorus/v1/"+device+"/skills" {
			continue
		}
		var s skillsTopic
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			t.Fatalf("skills payload: %v: %s", err, m.Payload)
		}
		last = map[string]string{}
		for _, sk := range s.Skills {
			last[sk.ID] = sk.State
		}
		if cond(last) {
			return last
		}
	}
	t.Fatalf("skills of %s never matched; last %v", device, last)
	return nil
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// The "done when" for the agent: chorus up shows availability,
// connectivity and the offline example loaded; rescan answers; an uninstall
// unloads only the skill that is gone.
func TestUpAgentE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	skills := filepath.Join(work, "skills")
	copyDir(t, "../../configs/skills", skills)
	// A second skill that needs nothing, so two are loaded.
	copyDir(t, filepath.Join(skills, "hello.chorus"), filepath.Join(skills, "echo.chorus"))
	doc := filepath.Join(skills, "echo.chorus", "SKILL.md")
	b, _ := os.ReadFile(doc)
	os.WriteFile(doc, []byte(strings.Replace(string(b), "name: hello.chorus", "name: echo.chorus", 1)), 0o644)
	p := startChorus(t, work, "up", "--data-dir", data, "--device", "pi-test", "--skills", skills,
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
	up := waitUp(t, p, data)
	addr := mqttAddr(t, up.MQTTURL)

	obs := brokertest.MustConnect(t, addr, up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-test/#")
	waitSkills(t, obs, "pi-test", func(s map[string]string) bool {
		return s["hello.chorus"] == "loaded" && s["echo.chorus"] == "loaded"
	})

	// Retained state is there for a newcomer.
	late := brokertest.MustConnect(t, addr, up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "late"})
	late.Sub(t, "chorus/v1/pi-test/availability")
	if m := late.Expect(t, "chorus/v1/pi-test/availability", 10*time.Second); string(m.Payload) != "online" || !m.Retain {
		t.Fatalf("availability = %q retain=%v", m.Payload, m.Retain)
	}
	late.Sub(t, "chorus/v1/pi-test/connectivity")
	var conn map[string]any
	if err := json.Unmarshal(late.Expect(t, "chorus/v1/pi-test/connectivity", 10*time.Second).Payload, &conn); err != nil {
		t.Fatal(err)
	}
	if _, ok := conn["internet"]; !ok {
		t.Fatalf("connectivity payload %v", conn)
	}

	// The manager becomes ready after its startup connectivity check.
	var out []byte
	var err error
	if werr := poll.Wait(context.Background(), "mycroft.skills.is_ready true", 20*time.Second, func() bool {
		out, err = exec.Command(chorusBin, "bus", "request", "mycroft.skills.is_ready", "--data-dir", data, "--timeout", "5s").CombinedOutput()
		return err == nil && strings.Contains(string(out), `"status":true`)
	}); werr != nil {
		t.Fatalf("%v: %v\n%s", werr, err, out)
	}
	checkDropIn(t, late, "pi-test", filepath.Join(data, "ovos", "mycroft", "mycroft.conf"))

	out, err = exec.Command(chorusBin, "bus", "request", "skillmanager.rescan", "--data-dir", data, "--timeout", "10s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"loaded":[]`) {
		t.Fatalf("rescan: %v\n%s", err, out)
	}

	// echo.chorus loses its exec but keeps SKILL.md: it stays loaded.
	// hello.chorus's directory goes: it is unloaded, and only it.
	if err := os.Remove(filepath.Join(skills, "echo.chorus", "run.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(skills, "hello.chorus")); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(chorusBin, "bus", "send", "ovos.skills.uninstall.complete", "--data", "{}", "--data-dir", data).CombinedOutput()
	if err != nil {
		t.Fatalf("send uninstall.complete: %v\n%s", err, out)
	}
	got := waitSkills(t, obs, "pi-test", func(s map[string]string) bool { _, ok := s["hello.chorus"]; return !ok })
	if got["echo.chorus"] != "loaded" || got["screen.chorus"] == "" || got["weather.chorus"] == "" {
		t.Fatalf("skills after uninstall: %v", got)
	}
	if err := p.stop(t, 10*time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	_ = configs.UpFileName
}

// checkDropIn connects to the OVOS websocket drop-in as a stock OVOS service
// configured as docs/ovos.md says: the URL built from the websocket section
// of the mycroft.conf the agent wrote (conf), no credentials. It checks the
// greeting, the echo and the same message on MQTT, and that the stock route
// /core of the birth's address gives nothing (issue 14, finding 2).
func checkDropIn(t *testing.T, c *brokertest.Client, device, conf string) {
	t.Helper()
	c.Sub(t, "chorus/v1/"+device+"/birth")
	var birth struct{ Websocket string }
	deadline := time.Now().Add(10 * time.Second)
	for birth.Websocket == "" || strings.HasSuffix(birth.Websocket, ":0") {
		if time.Now().After(deadline) {
			t.Fatalf("no websocket address in the birth: %+v", birth)
		}
		m := c.Expect(t, "chorus/v1/"+device+"/birth", time.Until(deadline))
		json.Unmarshal(m.Payload, &birth)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+birth.Websocket+"/core", nil); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the stock route /core: %v, want 403", err)
	}
	c.Sub(t, "chorus/v1/"+device+"/bus/+")
	ws, _, err := websocket.DefaultDialer.Dial(ovosBusURL(t, conf), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, greet, err := ws.ReadMessage()
	if err != nil || !strings.Contains(string(greet), `"type":"connected"`) {
		t.Fatalf("greeting: %v %s", err, greet)
	}
	// As ovos-bus-client: ovos.session.sync right after connecting, then
	// messages carrying the serialized session (BUS.md §3).
	session := `{"session":{"session_id":"default","lang":"en-US","active_skills":[]}}`
	sync := `{"type":"ovos.session.sync","data":{},"context":` + session + `}`
	msg := `{"type":"chorus.e2e.hello","data":{"n":1},"context":` + session + `}`
	for _, f := range []string{sync, msg} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	for {
		_, echo, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("no echo: %v", err)
		}
		if strings.Contains(string(echo), "chorus.e2e.hello") {
			break
		}
	}
	if m := c.Expect(t, "chorus/v1/"+device+"/bus/chorus.e2e.hello", 10*time.Second); string(m.Payload) != msg {
		t.Fatalf("mqtt got %s", m.Payload)
	}
}

// ovosBusURL waits for the mycroft.conf the agent writes for the OVOS
// services and builds the URL from its websocket section the way
// ovos-bus-client does: ws[s]://{host}:{port}{route} (BUS.md §3). The file
// must be readable by its owner alone.
func ovosBusURL(t *testing.T, conf string) string {
	t.Helper()
	var b []byte
	var err error
	if werr := poll.Wait(context.Background(), "mycroft.conf at "+conf, 20*time.Second, func() bool {
		b, err = os.ReadFile(conf)
		return err == nil
	}); werr != nil {
		t.Fatalf("%v: %v", werr, err)
	}
	if st, err := os.Stat(conf); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v (%v), want 0600", conf, st.Mode().Perm(), err)
	}
	var c struct {
		Websocket struct {
			Host  string
			Port  int
			Route string
			SSL   bool
		}
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", conf, err)
	}
	scheme := "ws"
	if c.Websocket.SSL {
		scheme = "wss"
	}
	return fmt.Sprintf("%s://%s:%d%s", scheme, c.Websocket.Host, c.Websocket.Port, c.Websocket.Route)
}

// `chorus bus send` from one process is printed by `chorus bus listen` in
// another, next to a running `chorus up`, with no flags but the data dir.
func TestBusListenSendE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	p := startChorus(t, work, "up", "--data-dir", data, "--device", "pi-bus", "--skills", t.TempDir(),
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	waitUp(t, p, data)
	listen := startChorus(t, work, "bus", "listen", "chorus.e2e.ping", "--data-dir", data)
	if err := poll.Wait(context.Background(), "bus listen subscribed", 20*time.Second, func() bool {
		return strings.Contains(listen.out.String(), "subscribed")
	}); err != nil {
		t.Fatalf("%v:\n%s", err, listen.out.String())
	}
	out, err := exec.Command(chorusBin, "bus", "send", "chorus.e2e.ping", "--data", `{"n":42}`, "--data-dir", data).CombinedOutput()
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	var printed string
	if err := poll.Wait(context.Background(), "bus listen printing the message", 20*time.Second, func() bool {
		for _, line := range strings.Split(listen.out.String(), "\n") {
			var m struct{ Type string }
			if json.Unmarshal([]byte(line), &m) == nil && m.Type == "chorus.e2e.ping" {
				printed = line
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%v:\n%s", err, listen.out.String())
	}
	var m struct {
		Device string
		Data   map[string]any
	}
	_ = json.Unmarshal([]byte(printed), &m) // it parsed above
	if m.Device != "pi-bus" || m.Data["n"] != float64(42) {
		t.Fatalf("listen printed %s", printed)
	}
}

// With chorus up running, a Home Assistant subscriber sees the satellite's
// device config, and the skill switch topic turns a skill off and on.
func TestUpHomeAssistantE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	p := startChorus(t, work, "up", "--data-dir", data, "--device", "pi-ha", "--skills", mustAbs(t, "../../configs/skills"),
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	up := waitUp(t, p, data)
	// Home Assistant writes switches: its own integration account (the
	// observer of up.json is read-only).
	out := mustChorus(t, work, "fleet", "integration", "add", "homeassistant", "--data-dir", data, "-o", "json")
	var ia api.IntegrationAdded
	if err := json.Unmarshal([]byte(out), &ia); err != nil {
		t.Fatalf("integration add output %q: %v", out, err)
	}
	ha := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), ia.Credentials.Username, ia.Credentials.Password, brokertest.ConnectOptions{ClientID: "ha"})
	ha.Sub(t, "chorus/v1/pi-ha/skills")
	waitSkills(t, ha, "pi-ha", func(s map[string]string) bool { return s["hello.chorus"] == "loaded" })
	ha.Sub(t, "homeassistant/device/chorus_pi-ha/config")
	var cfg struct {
		Dev  map[string]any            `json:"device"`
		Cmps map[string]map[string]any `json:"components"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := ha.Expect(t, "homeassistant/device/chorus_pi-ha/config", time.Until(deadline))
		full, _ := hadiscovery.ExpandJSON(m.Payload) // Home Assistant's view of the abbreviated config
		if json.Unmarshal(full, &cfg) == nil && len(cfg.Cmps) > 0 {
			found := false
			for _, c := range cfg.Cmps {
				if c["platform"] == "switch" && c["command_topic"] == "chorus/v1/pi-ha/skill/hello.chorus/set" {
					found = true
				}
			}
			if found {
				break
			}
		}
	}
	if ids, _ := cfg.Dev["identifiers"].([]any); len(ids) == 0 {
		t.Fatalf("device block without identifiers: %v", cfg.Dev)
	}
	ha.Pub(t, "chorus/v1/pi-ha/skill/hello.chorus/set", []byte("OFF"), false)
	waitSkills(t, ha, "pi-ha", func(s map[string]string) bool { return s["hello.chorus"] == "inactive" })
	ha.Pub(t, "chorus/v1/pi-ha/skill/hello.chorus/set", []byte("ON"), false)
	waitSkills(t, ha, "pi-ha", func(s map[string]string) bool { return s["hello.chorus"] == "loaded" })
}
