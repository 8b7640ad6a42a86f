//go:build !chorus_agent

package main

// End-to-end tests of issue 16's presence, data dir lock and unreachable
// broker points, driving the binary: a gateway and agents with data dirs of
// their own on 127.0.0.1.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/loopbackport"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// A re-imaged satellite (fresh data dir, session counter back at 1) is
// online on its first connection; after a gateway restart, an agent killed
// while the gateway was down shows offline within presence.grace (registry
// and retained availability) while one that reconnected stays online.
//
// The gateway is restarted on the ports its first run was given, which are
// its own (startFaultFleet), so the test runs beside others.
func TestPresenceE2E(t *testing.T) {
	t.Parallel()
	f := startFaultFleetConfig(t, `{"presence": {"grace": 3}}`, "room", "pi-a", "pi-b")
	f.startAgent("pi-a")
	f.startAgent("pi-b")
	f.waitOnline("pi-a", "pi-b")
	f.waitDevice("pi-a", "past session 1", func(d api.Device) bool { return d.BirthSession >= 1 })

	// Restart pi-a's agent twice so the gateway's session is past 1, then
	// re-image it: a fresh data dir.
	for range 2 {
		if err := f.agents["pi-a"].stop(t, 20*time.Second); err != nil {
			t.Fatalf("stop pi-a: %v", err)
		}
		f.startAgent("pi-a")
		f.waitOnline("pi-a")
	}
	f.waitDevice("pi-a", "at session 3", func(d api.Device) bool { return d.BirthSession == 3 })
	f.agents["pi-a"].kill(t)
	if err := os.RemoveAll(f.agentData("pi-a")); err != nil {
		t.Fatal(err)
	}
	f.startAgent("pi-a")
	f.waitDevice("pi-a", "online at session 1 (re-imaged)", func(d api.Device) bool { return d.Online && d.BirthSession == 1 })
	waitRetained(t, f, "pi-a", "online")

	// Stop the gateway, kill pi-b's agent while it is down, start it again.
	before := deviceOf(f, "pi-b")
	httpAddr := strings.TrimPrefix(f.up.HTTPURL, "http://")
	if err := f.gw.stop(t, 20*time.Second); err != nil {
		t.Fatalf("stop gateway: %v", err)
	}
	f.agents["pi-b"].kill(t)
	if err := os.Remove(configs.UpPath(f.gwData)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(f.work, "gateway.json")
	f.gw = startChorus(t, f.work, "gateway", "--data-dir", f.gwData, "--config", cfg,
		"--mqtt-listen", mqttAddr(t, f.up.MQTTURL), "--http-listen", httpAddr)
	waitUp(t, f.gw, f.gwData)
	restarted := time.Now()
	f.waitDevice("pi-b", "offline", func(d api.Device) bool { return !d.Online })
	if took := time.Since(restarted); took > 3*time.Second+30*time.Second {
		t.Errorf("pi-b marked offline %s after the restart; grace 3s", took)
	}
	waitRetained(t, f, "pi-b", "offline")
	if got := haAvailabilityTopic(t, f, "pi-b"); got != "chorus/v1/pi-b/availability" {
		t.Errorf("Home Assistant follows %q for pi-b's availability, not the topic shown offline", got)
	}
	// While it was connected its LAST SEEN was the time of asking (before);
	// after the restart it is a time it was heard: not later than that, and
	// not the restart.
	after := deviceOf(f, "pi-b")
	if after.LastSeen.IsZero() || after.LastSeen.After(restarted) || after.LastSeen.After(before.LastSeen) {
		t.Errorf("pi-b LAST SEEN %v: want a time it was heard (by %v), not the restart (%v)", after.LastSeen, before.LastSeen, restarted)
	}
	f.waitOnline("pi-a")
	waitRetained(t, f, "pi-a", "online")
	waitOutput(t, f.gw, 0, "device marked offline", "device=pi-b")
}

// haAvailabilityTopic is the availability topic of the device's retained
// Home Assistant discovery config: what Home Assistant shows it by.
func haAvailabilityTopic(t *testing.T, f *faultFleet, device string) string {
	t.Helper()
	cfgTopic := "homeassistant/device/chorus_" + device + "/config"
	ha := f.observer("ha-"+device, cfgTopic)
	defer ha.Close()
	m := ha.Expect(t, cfgTopic, 30*time.Second)
	var cfg struct {
		AvailabilityTopic string `json:"availability_topic"`
	}
	full, err := hadiscovery.ExpandJSON(m.Payload) // read as Home Assistant reads the abbreviated keys
	if err == nil {
		err = json.Unmarshal(full, &cfg)
	}
	if err != nil {
		t.Fatalf("discovery config of %s: %v", device, err)
	}
	return cfg.AvailabilityTopic
}

func deviceOf(f *faultFleet, id string) api.Device {
	f.t.Helper()
	var out struct{ Device api.Device }
	f.fleetJSON(&out, "device", "show", id)
	return out.Device
}

// waitRetained waits until the device's retained availability, read as a
// new subscriber (Home Assistant) reads it, is want.
func waitRetained(t *testing.T, f *faultFleet, device, want string) {
	t.Helper()
	var got string
	if err := poll.Wait(context.Background(), "retained availability of "+device+" "+want, faultDeadline, func() bool {
		got = f.retained(t, device)["availability"]
		return got == want
	}); err != nil {
		t.Fatalf("%v: it is %q", err, got)
	}
}

// One process per data dir: a second gateway, `chorus up` or agent on a
// data dir in use fails at once, naming the holder's pid and how to stop it.
func TestDataDirLockE2E(t *testing.T) {
	t.Parallel()
	f := startFaultFleet(t, "room", "pi")
	pid := strconv.Itoa(f.gw.cmd.Process.Pid)
	for _, args := range [][]string{
		{"gateway", "--data-dir", f.gwData, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"},
		{"up", "--data-dir", f.gwData, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"},
	} {
		out, err := runChorus(t, f.work, args...)
		if err == nil {
			t.Fatalf("chorus %s next to a running gateway succeeded:\n%s", args[0], out)
		}
		for _, want := range []string{"in use by pid " + pid, "chorus gateway", "kill " + pid} {
			if !strings.Contains(out, want) {
				t.Errorf("chorus %s: output does not say %q:\n%s", args[0], want, out)
			}
		}
	}
	if up, err := configs.ReadUp(configs.UpPath(f.gwData)); err != nil || up.HTTPURL != f.up.HTTPURL {
		t.Errorf("up.json = %+v (%v), want the running gateway's", up, err)
	}

	a := f.startAgent("pi")
	f.waitOnline("pi")
	out, err := runChorus(t, f.work, "agent", "--credentials", f.creds("pi"), "--data-dir", f.agentData("pi"),
		"--skills", filepath.Join(f.work, "bundled-pi"), "--ws-listen", "off")
	if err == nil || !strings.Contains(out, "in use by pid "+strconv.Itoa(a.cmd.Process.Pid)) {
		t.Fatalf("a second agent on the data dir: %v\n%s", err, out)
	}
}

// An agent that cannot reach its broker says so, naming the address, and
// stops promptly on SIGTERM: at start (nothing listens) and while running
// (the gateway went away).
//
// It needs a port nothing listens on (connection refused), and then its
// gateway's freed port, to stay unbound: both are ports of its own
// (gateway/loopbackport, startFaultFleet), so it runs beside others.
func TestAgentBrokerUnreachableE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	addr := loopbackport.Addr(t)
	creds := filepath.Join(work, "pi.json")
	if err := configs.WriteAgentCredentials(creds, configs.AgentCredentials{Device: "pi", MQTTURL: "mqtt://" + addr,
		Username: "pi", Password: "secret", SkillKey: base64.StdEncoding.EncodeToString(make([]byte, 32)), KeyVersion: 1}); err != nil {
		t.Fatal(err)
	}
	bundled := filepath.Join(work, "bundled")
	if err := os.MkdirAll(bundled, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startChorus(t, work, "agent", "--credentials", creds, "--data-dir", filepath.Join(work, "data"),
		"--skills", bundled, "--ws-listen", "off", "--log-level", "info")
	waitOutput(t, p, 0, "cannot reach the MQTT broker", "mqtt://"+addr, "connection refused")
	if err := p.stop(t, 10*time.Second); err != nil {
		t.Errorf("agent stopped while unreachable: %v", err)
	}

	f := startFaultFleet(t, "room", "pi-2")
	a := f.startAgent("pi-2")
	f.waitOnline("pi-2")
	offset := len(a.out.String()) // before the kill: the agent says so within milliseconds
	f.gw.kill(t)
	waitOutput(t, a, offset, "mqtt://"+mqttAddr(t, f.up.MQTTURL))
	start := time.Now()
	// A publish in flight at the kill once held the stop for its whole 10 s
	// (gateway/bus: TestDrainEndsAPublishAwaitingItsAck); a stop that still
	// hangs prints the agent's goroutines (proc.stop).
	if err := a.stop(t, 10*time.Second); err != nil {
		t.Errorf("agent stopped with its gateway gone: %v", err)
	}
	t.Logf("agent stopped %s after SIGTERM with its gateway gone", time.Since(start))
}

// The advertise flags reach up.json, the banner and every device's
// credentials; a value that cannot be an address stops the start with the
// reason, and --mqtt-url on the embedded broker points to them.
func TestGatewayAdvertiseFlagsE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "gw")
	gw := startChorus(t, work, "gateway", "--data-dir", data, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
		"--advertise-mqtt", "gw.example", "--advertise-http", "https://gw.example:8443")
	up := waitUp(t, gw, data)
	wantMQTT := "mqtt://gw.example:" + strings.Split(mqttAddr(t, up.MQTTURL), ":")[1]
	if up.AdvertiseMQTTURL != wantMQTT || up.AdvertiseHTTPURL != "https://gw.example:8443" {
		t.Fatalf("up.json advertises %q %q, want %q https://gw.example:8443", up.AdvertiseMQTTURL, up.AdvertiseHTTPURL, wantMQTT)
	}
	waitOutput(t, gw, 0, "devices are given", wantMQTT)
	creds := filepath.Join(work, "pi.json")
	out := mustChorus(t, work, "fleet", "device", "add", "pi", "--credentials-out", creds, "--data-dir", data)
	if strings.Contains(out, "warning") {
		t.Errorf("warned for a routable advertised address:\n%s", out)
	}
	c, err := configs.ReadAgentCredentials(creds)
	if err != nil || c.MQTTURL != wantMQTT || c.ServerURL != "https://gw.example:8443" {
		t.Fatalf("credentials %+v (%v)", c, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--advertise-mqtt", "http://gw.example"}, "want mqtt://host[:port]"},
		{[]string{"--advertise-http", "gw.example:99999"}, "want host, host:port or http://host:port"},
		{[]string{"--mqtt-url", "mqtt://gw.example:1883"}, "use --advertise-mqtt"},
	} {
		args := append([]string{"gateway", "--data-dir", filepath.Join(work, "bad"), "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"}, tc.args...)
		out, err := runChorus(t, work, args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("chorus %s: %v, want an error saying %q:\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
}
