package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// The portability suite: the fleet scenario and the part of the ACL matrix
// that docs/security.md says holds on an external broker, on Mosquitto 2
// configured only from `chorus fleet export mosquitto`. scripts/test.sh
// installs Mosquitto; in CI a missing mosquitto is a failure, not a skip.
func TestMosquittoPortabilityE2E(t *testing.T) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("mosquitto not on PATH: install it (apt-get install mosquitto) to run the external-broker portability suite")
		}
		t.Fatal("mosquitto not on PATH in CI: scripts/test.sh should have installed it")
	}
	work := t.TempDir()
	mq := filepath.Join(work, "mosquitto")
	os.MkdirAll(mq, 0o700)

	// Bootstrap: only the controller's account, as an operator would with mosquitto_passwd.
	ctlPass := randHex(t)
	h, err := mosquittoexport.Hash(ctlPass)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mq, "password_file"), "controller:"+h+"\n")
	writeFile(t, filepath.Join(mq, "acl_file"), "user controller\ntopic readwrite #\n")
	port := freePort(t)
	conf := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\nlistener %d 127.0.0.1\npersistence false\n"+
		"password_file %s\nacl_file %s\nlog_dest stdout\nlog_type all\n",
		port, filepath.Join(mq, "password_file"), filepath.Join(mq, "acl_file"))
	if os.Getuid() == 0 { // mosquitto drops root for the "mosquitto" user, who cannot read 0600 files in our temp dir
		if u, err := user.Current(); err == nil {
			conf += "user " + u.Username + "\n"
		}
	}
	writeFile(t, filepath.Join(mq, "mosquitto.conf"), conf)
	broker := exec.Command(bin, "-c", filepath.Join(mq, "mosquitto.conf"))
	blog := newSyncBuffer()
	broker.Stdout, broker.Stderr = blog, blog
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = broker.Process.Kill()
		_ = broker.Wait()
		if t.Failed() {
			t.Logf("mosquitto log:\n%s", blog.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	mqttURL := "mqtt://" + addr

	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--http-listen", "127.0.0.1:0",
		"--broker", "external", "--mqtt-url", mqttURL, "--mqtt-username", "controller", "--mqtt-password", ctlPass)
	up := waitUp(t, g, gw)
	if up.MQTTURL != mqttURL {
		t.Fatalf("up.json mqtt_url = %q, want %q", up.MQTTURL, mqttURL)
	}
	fleetArgs := func(args ...string) []string { return append(args, "--data-dir", gw) }

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
	out := mustChorus(t, work, fleetArgs("fleet", "export", "mosquitto", "--out", mq)...)
	if !strings.Contains(out, "integration:observer") { // the local observer: ':' is not expressible
		t.Errorf("export does not report the skipped observer:\n%s", out)
	}
	if err := broker.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The reload is asynchronous: wait until a device is accepted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := brokertest.Connect(t, addr, "pi-1", creds["pi-1"].Password, brokertest.ConnectOptions{ClientID: "probe"})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi-1 not accepted after the reload: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	for _, d := range devices {
		startChorus(t, work, "agent", "--credentials", filepath.Join(work, d+".json"), "--data-dir", filepath.Join(work, "agent-"+d),
			"--skills", t.TempDir(), "--ws-listen", "off")
	}
	obs := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")

	// Skill processes cannot authenticate on Mosquitto (docs/security.md):
	// the fleet skill here is ready on start and needs no MQTT session.
	skill := filepath.Join(work, "fleet.sleeper")
	os.MkdirAll(skill, 0o755)
	writeFile(t, filepath.Join(skill, "SKILL.md"), "---\nname: fleet.sleeper\ndescription: Waits.\nversion: 1.0.0\nexec: run.sh\nready: on-start\n---\nWaits.\n")
	os.WriteFile(filepath.Join(skill, "run.sh"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755)
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", skill)...)
	mustChorus(t, work, fleetArgs("fleet", "install", "fleet.sleeper", "--tag", "kitchen", "--timeout", "60s", "--wait")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { return s["fleet.sleeper"] == "loaded" })
	mustChorus(t, work, fleetArgs("fleet", "uninstall", "fleet.sleeper", "--tag", "kitchen", "--timeout", "60s", "--wait")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { _, ok := s["fleet.sleeper"]; return !ok })

	checkMosquittoACL(t, addr, creds["pi-1"], ctlPass)
}

// checkMosquittoACL checks the rows of the matrix Mosquitto's ACL file
// expresses: a device reaches neither another device's topics nor desired.
func checkMosquittoACL(t *testing.T, addr string, c configs.AgentCredentials, ctlPass string) {
	watch := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "acl-watch"})
	watch.Sub(t, "chorus/v1/pi-2/#")
	watch.Sub(t, "chorus/v1/pi-1/desired")
	watch.Sub(t, "chorus/v1/pi-1/bus/#")
	for {
		if _, ok := watch.Next(300 * time.Millisecond); !ok {
			break // retained state replayed; now quiet
		}
	}
	dev := brokertest.MustConnect(t, addr, "pi-1", c.Password, brokertest.ConnectOptions{ClientID: "pi-1-acl"})
	dev.Pub(t, "chorus/v1/pi-2/bus/speak", []byte(`{"type":"speak"}`), false)
	dev.Pub(t, "chorus/v1/pi-2/availability", []byte("online"), true)
	dev.Pub(t, "chorus/v1/pi-1/desired", []byte(`{}`), true)
	dev.Pub(t, "chorus/v1/pi-1/bus/ping", []byte(`{"type":"ping"}`), false) // allowed: proves delivery works
	m, ok := watch.Next(5 * time.Second)
	if !ok || m.Topic != "chorus/v1/pi-1/bus/ping" {
		t.Fatalf("first delivery = %v, %v; want only the device's own bus message", m, ok)
	}
	if m, ok := watch.Next(500 * time.Millisecond); ok {
		t.Fatalf("Mosquitto delivered a publish the ACL refuses: %s %q", m.Topic, m.Payload)
	}
	// Mosquitto 2.0 grants the SUBSCRIBE and filters each delivery by the
	// read ACL: pi-1 must get none of pi-2's messages, only its own.
	dev.Sub(t, "chorus/v1/pi-2/#")
	dev.Sub(t, "chorus/v1/pi-1/bus/#")
	for {
		if _, ok := dev.Next(300 * time.Millisecond); !ok {
			break
		}
	}
	watch.Pub(t, "chorus/v1/pi-2/bus/secret", []byte(`{"type":"secret"}`), false)
	watch.Pub(t, "chorus/v1/pi-1/bus/mine", []byte(`{"type":"mine"}`), false)
	if m, ok := dev.Next(5 * time.Second); !ok || m.Topic != "chorus/v1/pi-1/bus/mine" {
		t.Fatalf("pi-1's first delivery = %v, %v; want only its own bus message", m, ok)
	}
	if m, ok := dev.Next(500 * time.Millisecond); ok {
		t.Fatalf("pi-1 received %s: another device's message", m.Topic)
	}
	if _, err := brokertest.Connect(t, addr, "pi-1", "wrong", brokertest.ConnectOptions{ClientID: "pi-1-bad"}); err == nil {
		t.Error("wrong device secret accepted")
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

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}
