//go:build !chorus_agent

package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport/mosquittotest"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// The portability suite: the fleet scenario and the part of the ACL matrix
// that docs/security.md says holds on an external broker, on Mosquitto 2
// with its dynamic-security plugin, configured only from `chorus fleet
// export mosquitto --dynsec`. Skills open their own MQTT sessions there with
// derived credentials (skills.credentials "derived"). scripts/test.sh
// installs Mosquitto; in CI a missing mosquitto is a failure, not a skip.
//
// Mosquitto listens on a port of its own and keeps it across Restart
// (mosquittotest, gateway/loopbackport), so the test runs beside others.
func TestMosquittoPortabilityE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := startMosquittoGateway(t, work)
	mq, ctlPass, up, fleetArgs := gw.mq, gw.ctlPass, gw.up, gw.fleetArgs
	addr, mqttURL := mq.Addr, "mqtt://"+mq.Addr
	if up.MQTTURL != mqttURL {
		t.Fatalf("up.json mqtt_url = %q, want %q", up.MQTTURL, mqttURL)
	}

	devices := []string{"pi-1", "pi-2"}
	creds := map[string]configs.AgentCredentials{}
	for _, d := range devices {
		path := filepath.Join(work, d+".json")
		mustChorus(t, work, fleetArgs("fleet", "device", "add", d, "--tag", "kitchen", "--credentials-out", path)...)
		c, err := configs.ReadAgentCredentials(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.MQTTURL != mqttURL {
			t.Fatalf("%s credentials carry %q, want the external broker %q", d, c.MQTTURL, mqttURL)
		}
		creds[d] = c
	}

	// The fleet skill runs the bundled hello example, which opens its own
	// MQTT session through the skill kit. Its assignment makes it known to
	// the controller, so the export carries a skill account per device.
	skill := filepath.Join(work, "fleet.hello")
	writeFleetSkill(t, skill, "fleet.hello", "1.0.0")
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", skill)...)
	out := mustChorus(t, work, fleetArgs("fleet", "install", "fleet.hello", "--tag", "kitchen", "--timeout", "60s")...)
	var rollout int
	if _, err := fmt.Sscanf(out, "rollout %d created", &rollout); err != nil {
		t.Fatalf("install output %q: %v", out, err)
	}

	// The devices-only password file export still works.
	mustChorus(t, work, fleetArgs("fleet", "export", "mosquitto", "--out", filepath.Join(work, "files"))...)
	checkPasswordFile(t, filepath.Join(work, "files", "password_file"), "pi-1", creds["pi-1"].Password)

	out = mustChorus(t, work, fleetArgs("fleet", "export", "mosquitto", "--dynsec", mq.Dir)...)
	if strings.Contains(out, "not exported") {
		t.Errorf("dynsec export left accounts out:\n%s", out)
	}
	// Mosquitto 2.0's plugin reads its file only at start: restart it (with
	// persistence, so the retained desired documents survive); the gateway reconnects.
	mq.Restart(t)
	mq.WaitLogin(t, "pi-1", creds["pi-1"].Password, true)

	agentConfig := filepath.Join(work, "agent.json")
	writeFile(t, agentConfig, `{"skills": {"credentials": "derived"}}`)
	for _, d := range devices {
		startChorus(t, work, "agent", "--config", agentConfig, "--credentials", filepath.Join(work, d+".json"),
			"--data-dir", filepath.Join(work, "agent-"+d), "--skills", t.TempDir(), "--ws-listen", "off")
	}
	obs := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")
	// watch ends "not done" (exit 3) while devices are offline: wait for
	// the agents to connect first.
	online := map[string]bool{}
	for _, d := range devices {
		online[d] = true
	}
	waitOnline(t, work, gw.dataDir, online)
	mustChorus(t, work, fleetArgs("fleet", "rollout", "watch", fmt.Sprint(rollout))...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { return s["fleet.hello"] == "loaded" })
	checkSkillAnswers(t, addr, ctlPass, "pi-1")

	checkMosquittoACL(t, addr, creds, up, ctlPass)

	mustChorus(t, work, fleetArgs("fleet", "uninstall", "fleet.hello", "--tag", "kitchen", "--timeout", "60s", "--wait", "--poll-interval", "200ms")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { _, ok := s["fleet.hello"]; return !ok })
}

// mosquittoGateway is `chorus gateway --broker external` on a Mosquitto
// (persistent across Restart) whose plugin starts with only the
// controller's account, as an operator would bootstrap it with
// mosquitto_ctrl dynsec init.
type mosquittoGateway struct {
	mq      *mosquittotest.Mosquitto
	ctlPass string // the controller's password
	dataDir string
	up      configs.Up
}

// startMosquittoGateway starts both, the gateway in work/gateway with args
// added, and returns once the gateway is up.
func startMosquittoGateway(t *testing.T, work string, args ...string) mosquittoGateway {
	t.Helper()
	g := mosquittoGateway{ctlPass: randHex(t), dataDir: filepath.Join(work, "gateway")}
	g.mq = mosquittotest.Start(t, mosquittotest.Config{DynSec: mosquittotest.Bootstrap(t, "controller", g.ctlPass), Persist: true})
	p := startChorus(t, work, append([]string{"gateway", "--data-dir", g.dataDir, "--http-listen", "127.0.0.1:0",
		"--broker", "external", "--mqtt-url", "mqtt://" + g.mq.Addr, "--mqtt-username", "controller", "--mqtt-password", g.ctlPass}, args...)...)
	g.up = waitUp(t, p, g.dataDir)
	return g
}

// fleetArgs adds the gateway's data dir to the args of a fleet command.
func (g mosquittoGateway) fleetArgs(args ...string) []string {
	return append(args, "--data-dir", g.dataDir)
}

// checkPasswordFile checks that the password file export has user's line
// and that it verifies password.
func checkPasswordFile(t *testing.T, path, user, password string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if u, h, ok := strings.Cut(line, ":"); ok && u == user {
			if !mosquittoexport.Verify(h, password) {
				t.Fatalf("password_file line of %s does not verify its secret", user)
			}
			return
		}
	}
	t.Fatalf("password_file lacks %s:\n%s", user, b)
}

// checkSkillAnswers pings the fleet skill over the bus: the skill's own
// MQTT session on Mosquitto subscribes and publishes.
func checkSkillAnswers(t *testing.T, addr, ctlPass, device string) {
	t.Helper()
	c := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "pinger"})
	c.Sub(t, "chorus/v1/"+device+"/bus/hello.chorus.ping.response")
	c.Pub(t, "chorus/v1/"+device+"/bus/hello.chorus.ping", []byte(`{"type":"hello.chorus.ping","data":{},"context":{}}`), false)
	m := c.Expect(t, "chorus/v1/"+device+"/bus/hello.chorus.ping.response", 10*time.Second)
	if !strings.Contains(string(m.Payload), "hello from "+device) {
		t.Fatalf("skill answered %s", m.Payload)
	}
}

// checkMosquittoACL checks, on Mosquitto, the rows of the matrix the
// dynamic-security export expresses (docs/security.md, "On an external
// broker"): for a device, a skill, an integration and an operator, allowed
// publishes arrive, refused ones are answered 0x87 and reach no subscriber,
// and subscriptions outside the role are refused.
func checkMosquittoACL(t *testing.T, addr string, creds map[string]configs.AgentCredentials, up configs.Up, ctlPass string) {
	t.Helper()
	pi1 := creds["pi-1"]
	skillPass := skillcred.MintDerived(skillcred.DeriveKey(pi1.Password), pi1.KeyVersion, "pi-1", "fleet.hello")
	watch := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "acl-watch"})
	watch.Sub(t, "chorus/v1/+/bus/+")
	watch.Sub(t, "chorus/v1/+/desired")
	watch.Sub(t, "chorus/v1/+/skill/+/set")
	rows := []struct {
		user, pass             string
		allowed, refused       []string
		subAllowed, subRefused []string
	}{
		{user: "pi-1", pass: pi1.Password,
			allowed:    []string{"chorus/v1/pi-1/bus/acl.device"},
			refused:    []string{"chorus/v1/pi-2/bus/acl.device", "chorus/v1/pi-1/desired", "chorus/v1/pi-1/skill/x/set"},
			subAllowed: []string{"chorus/v1/pi-1/#"},
			subRefused: []string{"chorus/v1/pi-2/#", "chorus/v1/#"}},
		{user: skillcred.Username("pi-1", "fleet.hello"), pass: skillPass,
			allowed:    []string{"chorus/v1/pi-1/bus/acl.skill"},
			refused:    []string{"chorus/v1/pi-1/bus/ovos.skills.install", "chorus/v1/pi-1/bus/skillmanager.deactivate", "chorus/v1/pi-1/availability", "chorus/v1/pi-2/bus/acl.skill", "chorus/v1/pi-1/desired"},
			subAllowed: []string{"chorus/v1/pi-1/bus/+"},
			subRefused: []string{"chorus/v1/pi-1/#", "chorus/v1/pi-2/bus/+"}},
		{user: up.Observer.Username, pass: up.Observer.Password,
			refused: []string{"chorus/v1/pi-2/skill/fleet.hello/set", "chorus/v1/pi-1/bus/acl.integration", "chorus/v1/pi-1/desired",
				"chorus/v1/pi-1/availability"},
			subAllowed: []string{"chorus/v1/#", "homeassistant/#"},
			subRefused: []string{"#"}},
		{user: up.Operator.Username, pass: up.Operator.Password,
			allowed:    []string{"chorus/v1/pi-2/bus/acl.operator"},
			refused:    []string{"chorus/v1/pi-1/desired", "chorus/v1/pi-1/skill/fleet.hello/set", "chorus/v1/pi-1/skills"},
			subAllowed: []string{"chorus/v1/#", "$SYS/#"},
			subRefused: []string{"#"}},
	}
	// The watcher sees the skills' own bus traffic too: only the topics
	// the rows publish to count.
	probed := map[string]bool{}
	for _, r := range rows {
		for _, topic := range append(slices.Clone(r.allowed), r.refused...) {
			probed[topic] = true
		}
	}
	next := func(d time.Duration) (*paho.Publish, bool) {
		deadline := time.Now().Add(d)
		for {
			m, ok := watch.Next(time.Until(deadline))
			if !ok || probed[m.Topic] && !m.Retain {
				return m, ok
			}
		}
	}
	for _, r := range rows {
		c := brokertest.MustConnect(t, addr, r.user, r.pass, brokertest.ConnectOptions{ClientID: "acl-" + strings.ReplaceAll(r.user, ":", "-")})
		for _, topic := range r.refused {
			if rc := c.Pub(t, topic, []byte(`{"type":"x","data":{},"context":{}}`), false); rc != 0x87 {
				t.Errorf("%s publish %s: reason %#x, want 0x87", r.user, topic, rc)
			}
		}
		for _, topic := range r.allowed {
			if rc := c.Pub(t, topic, []byte("OFF"), false); rc >= 0x80 {
				t.Errorf("%s publish %s: reason %#x, want accepted", r.user, topic, rc)
			}
			if m, ok := next(5 * time.Second); !ok || m.Topic != topic {
				t.Fatalf("%s: delivered %v, %v; want only %s", r.user, m, ok, topic)
			}
		}
		if m, ok := next(300 * time.Millisecond); ok {
			t.Fatalf("%s: Mosquitto delivered a refused publish on %s", r.user, m.Topic)
		}
		for _, f := range r.subAllowed {
			if rc := c.Sub(t, f); rc >= 0x80 {
				t.Errorf("%s subscribe %s: reason %#x, want granted", r.user, f, rc)
			}
		}
		for _, f := range r.subRefused {
			if rc := c.Sub(t, f); rc != 0x87 {
				t.Errorf("%s subscribe %s: reason %#x, want 0x87", r.user, f, rc)
			}
		}
		c.Close()
	}
	refused := map[string][2]string{
		"wrong device secret":          {"pi-1", "wrong"},
		"signed skill credential":      {skillcred.Username("pi-1", "fleet.hello"), "v1.AAAA"},
		"derived from another device":  {skillcred.Username("pi-1", "fleet.hello"), skillcred.MintDerived(skillcred.DeriveKey(creds["pi-2"].Password), 1, "pi-1", "fleet.hello")},
		"skill the export did not see": {skillcred.Username("pi-1", "other.skill"), skillcred.MintDerived(skillcred.DeriveKey(pi1.Password), pi1.KeyVersion, "pi-1", "other.skill")},
	}
	for name, c := range refused {
		if _, err := brokertest.Connect(t, addr, c[0], c[1], brokertest.ConnectOptions{ClientID: "bad"}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func randHex(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
