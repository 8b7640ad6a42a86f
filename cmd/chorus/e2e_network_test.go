//go:build !chorus_agent

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
)

// A gateway on one machine and satellites on others (network namespaces,
// netlab_test.go), enrolled with credentials files: the gateway listens on
// wildcards, the credentials carry its routable address (not [::] or
// 0.0.0.0) and the satellite comes online with them (issue 16, point 1); a
// satellite re-imaged with a fresh data dir is online at once (point 2);
// after a gateway restart a satellite killed meanwhile shows offline within
// the grace while the other comes back (point 3); a satellite joins with a
// join token, is refused by the broker while pending and comes online once
// accepted; `install --all --wait` with one satellite offline ends, names it
// and exits 3 (point 4).
func TestFleetOnANetworkE2E(t *testing.T) {
	t.Parallel()
	lab := newNetLab(t)
	gwNode, piNode := lab.node("gw"), lab.node("pi")
	work := t.TempDir()
	gwData := filepath.Join(work, "gateway")

	cfg := filepath.Join(work, "gateway.json")
	if err := os.WriteFile(cfg, []byte(`{"presence": {"grace": 3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gwArgs := []string{"gateway", "--config", cfg, "--data-dir", gwData, "--mqtt-listen", "0.0.0.0:1883", "--http-listen", "[::]:8080"}
	gw := gwNode.startIn(t, work, gwArgs...)
	up := waitUp(t, gw, gwData)
	wantMQTT, wantHTTP := "mqtt://"+gwNode.addr+":1883", "http://"+gwNode.addr+":8080"
	if up.AdvertiseMQTTURL != wantMQTT || up.AdvertiseHTTPURL != wantHTTP {
		t.Fatalf("up.json advertises %q %q, want %q %q", up.AdvertiseMQTTURL, up.AdvertiseHTTPURL, wantMQTT, wantHTTP)
	}
	waitOutput(t, gw, 0, "advertising mqtt to devices", "url="+wantMQTT, "routable address of eth0")

	credsFile := filepath.Join(work, "pi-kitchen.json")
	out := gwNode.mustIn(t, work, "fleet", "device", "add", "pi-kitchen", "--credentials-out", credsFile, "--data-dir", gwData)
	if strings.Contains(out, "warning") {
		t.Errorf("device add warned about routable addresses:\n%s", out)
	}
	creds, err := configs.ReadAgentCredentials(credsFile)
	if err != nil {
		t.Fatal(err)
	}
	if creds.MQTTURL != wantMQTT || creds.ServerURL != wantHTTP {
		t.Fatalf("credentials carry %q %q, want %q %q", creds.MQTTURL, creds.ServerURL, wantMQTT, wantHTTP)
	}

	bundled := filepath.Join(work, "bundled")
	if err := os.MkdirAll(bundled, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := func(n *labNode, creds, data string) *proc {
		return n.startIn(t, work, "agent", "--credentials", creds, "--data-dir", data, "--skills", bundled, "--ws-listen", "off")
	}
	device := func(id string) api.Device {
		var d struct{ Device api.Device }
		out := gwNode.mustIn(t, work, "fleet", "device", "show", id, "--data-dir", gwData, "-o", "json")
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("device show: %v\n%s", err, out)
		}
		return d.Device
	}
	waitDevice := func(id, what string, cond func(api.Device) bool) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			d := device(id)
			if cond(d) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never %s across the network; last %+v", id, what, d)
			}
			time.Sleep(200 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
	online := func(d api.Device) bool { return d.Online }

	kitchen := agent(piNode, credsFile, filepath.Join(work, "pi-data"))
	waitDevice("pi-kitchen", "online", online)

	// Re-imaged: a fresh data dir, its session counter back at 1.
	kitchen.kill(t)
	kitchen = agent(piNode, credsFile, filepath.Join(work, "pi-data-reimaged"))
	waitDevice("pi-kitchen", "online at session 1", func(d api.Device) bool { return d.Online && d.BirthSession == 1 })

	// A second satellite, killed while the gateway is down: offline within
	// the grace after the restart, while pi-kitchen comes back online.
	bedNode := lab.node("bed")
	bedCreds := filepath.Join(work, "pi-bedroom.json")
	gwNode.mustIn(t, work, "fleet", "device", "add", "pi-bedroom", "--credentials-out", bedCreds, "--data-dir", gwData)
	bedroom := agent(bedNode, bedCreds, filepath.Join(work, "bed-data"))
	waitDevice("pi-bedroom", "online", online)
	if err := gw.stop(t, 20*time.Second); err != nil {
		t.Fatalf("stop gateway: %v", err)
	}
	bedroom.kill(t)
	if err := os.Remove(configs.UpPath(gwData)); err != nil {
		t.Fatal(err)
	}
	gw = gwNode.startIn(t, work, gwArgs...)
	waitUp(t, gw, gwData)
	restarted := time.Now()
	waitDevice("pi-bedroom", "offline", func(d api.Device) bool { return !d.Online })
	t.Logf("pi-bedroom offline %s after the gateway restart (grace 3s)", time.Since(restarted))
	waitOutput(t, gw, 0, "device marked offline", "device=pi-bedroom")
	waitDevice("pi-kitchen", "back online", online)

	// A third satellite joins with a token that carries the advertised URL.
	tokOut := gwNode.mustIn(t, work, "fleet", "token", "create", "--tag", "hall", "--data-dir", gwData)
	token := ""
	for _, l := range strings.Split(tokOut, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "chorusjoin1_") {
			token = strings.TrimSpace(l)
		}
	}
	tok, err := api.ParseJoinToken(token)
	if err != nil || tok.URL != wantHTTP {
		t.Fatalf("token %q: %+v, %v; want the advertised URL %s", token, tok, err, wantHTTP)
	}
	hallNode := lab.node("hall")
	hallData := filepath.Join(work, "hall-data")
	hall := hallNode.startIn(t, work, "agent", "join", token, "--data-dir", hallData, "--device", "pi-hall",
		"--skills", bundled, "--ws-listen", "off")
	var pendingID string
	deadline := time.Now().Add(60 * time.Second)
	for pendingID == "" {
		out := gwNode.mustIn(t, work, "fleet", "device", "pending", "-o", "json", "--data-dir", gwData)
		var pl api.PendingDevicesResponse
		if json.Unmarshal([]byte(out), &pl) == nil && len(pl.Pending) == 1 {
			pendingID = pl.Pending[0].ID
		} else if time.Now().After(deadline) {
			t.Fatalf("pi-hall never pending: %s\n%s", out, hall.out.String())
		} else {
			time.Sleep(200 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
	// Pending: the broker refuses it from its own machine, whatever it holds.
	if out, err := hallNode.runIn(t, work, "bus", "send", "hello", "--mqtt-url", wantMQTT, "--username", "pi-hall",
		"--password", tok.Secret, "--device", "pi-hall"); err == nil {
		t.Fatalf("a pending satellite published on the broker:\n%s", out)
	}
	gwNode.mustIn(t, work, "fleet", "device", "accept", pendingID, "--data-dir", gwData)
	waitDevice("pi-hall", "online after accept", online)

	// Rollouts that finish: pi-bedroom is offline.
	skill := filepath.Join(work, "net.hello")
	writeFleetSkill(t, skill, "net.hello", "1.0.0")
	gwNode.mustIn(t, work, "fleet", "skill", "publish", skill, "--data-dir", gwData)
	out, err = gwNode.runIn(t, work, "fleet", "install", "net.hello", "--all", "--timeout", "60s", "--wait", "--poll-interval", "200ms",
		"--poll-interval", "200ms", "--data-dir", gwData)
	if code := exitCode(err); code != 3 || !strings.Contains(out, "pi-bedroom") || !strings.Contains(out, "offline") {
		t.Fatalf("install --all --wait with pi-bedroom offline: exit %d, want 3 naming it offline\n%s", code, out)
	}
	if !strings.Contains(out, "2/3 succeeded") {
		t.Errorf("install output: want the two online satellites succeeded:\n%s", out)
	}
	t.Logf("install --all --wait:\n%s", out)
}
