package mosquittosync

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// The syncer against a real Mosquitto 2 with its dynamic-security plugin
// that starts with only the sync's own account: a client whose password is
// known is created, one handed over by SetSecret is created, a rotation
// handed over re-sets it, one that leaves the desired set is deleted, and
// Await returns once the plugin holds what it names.
func TestSyncerOnMosquitto(t *testing.T) {
	h, _ := mosquittoexport.Hash("ctl-pass")
	boot, err := mosquittoexport.RenderDynSec(nil, nil, mosquittoexport.Superuser{Username: "controller", Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	addr := startMosquitto(t, boot.JSON)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + addr, Username: "controller", Password: "ctl-pass", CleanStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	acls := func(dev string) []mosquittoexport.ACL {
		return []mosquittoexport.ACL{{ACLType: mosquittoexport.PublishClientSend, Topic: "chorus/v1/" + dev + "/#", Allow: true}}
	}
	var mu sync.Mutex
	desired := []Client{
		{Username: "skill:pi-1:hello", Kind: "skill", Fingerprint: "s1", Password: "d1.skill", ACLs: acls("pi-1")},
		{Username: "pi-1", Kind: "device", Fingerprint: "f1", ACLs: acls("pi-1")},
	}
	setDesired := func(cs ...Client) { mu.Lock(); desired = cs; mu.Unlock() }
	s, err := New(Config{Transport: m, Self: "controller", Debounce: 10 * time.Millisecond, Resync: time.Hour,
		Desired: func(context.Context) ([]Client, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]Client(nil), desired...), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if !s.Await(ctx, "skill:pi-1:hello") {
		t.Fatal("Await: skill client never ready")
	}
	wantLogin(t, addr, "skill:pi-1:hello", "d1.skill", true)
	wantLogin(t, addr, "pi-1", "first", false) // its secret was never handed over

	s.SetSecret("pi-1", "f1", "first")
	if !s.Await(ctx, "pi-1") {
		t.Fatal("Await: device never ready")
	}
	wantLogin(t, addr, "pi-1", "first", true)

	setDesired(Client{Username: "pi-1", Kind: "device", Fingerprint: "f2", ACLs: acls("pi-1")})
	s.SetSecret("pi-1", "f2", "second")
	wantLogin(t, addr, "pi-1", "second", true)
	wantLogin(t, addr, "pi-1", "first", false)
	wantLogin(t, addr, "skill:pi-1:hello", "d1.skill", false) // left the desired set

	setDesired()
	s.Trigger()
	wantLogin(t, addr, "pi-1", "second", false)
	s.Close()
	s.Close() // idempotent
}

func wantLogin(t *testing.T, addr, user, pass string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := brokertest.Connect(t, addr, user, pass, brokertest.ConnectOptions{ClientID: "probe"})
		if err == nil {
			c.Close()
		}
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: accepted=%v, want %v (%v)", user, err == nil, want, err)
		}
		time.Sleep(50 * time.Millisecond) // bounded poll: the sync is asynchronous
	}
}

// startMosquitto runs Mosquitto with the plugin loading body on a free
// loopback port; skipped outside CI when mosquitto or the plugin is missing.
func startMosquitto(t *testing.T, body []byte) string {
	t.Helper()
	bin, _ := exec.LookPath("mosquitto")
	plugin := mosquittoexport.FindPlugin()
	if bin == "" || plugin == "" {
		if os.Getenv("CI") == "" {
			t.Skip("mosquitto or its dynamic-security plugin is missing (apt-get install mosquitto)")
		}
		t.Fatal("mosquitto or its dynamic-security plugin is missing in CI")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dynamic-security.json")
	if err := os.WriteFile(cfg, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	conf := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\nlistener %s 127.0.0.1\nplugin %s\nplugin_opt_config_file %s\n", port, plugin, cfg)
	if os.Getuid() == 0 { // mosquitto drops root for "mosquitto", who cannot read our 0600 files
		if u, err := user.Current(); err == nil {
			conf += "user " + u.Username + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", filepath.Join(dir, "mosquitto.conf"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
