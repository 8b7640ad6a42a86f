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

// A gateway on one machine and a satellite on another (network namespaces,
// netlab_test.go), enrolled with a credentials file: the gateway listens on
// wildcards, the credentials carry its routable address (not [::] or
// 0.0.0.0), and the satellite comes online with them (issue 16, point 1).
func TestFleetOnANetworkE2E(t *testing.T) {
	lab := newNetLab(t)
	gwNode, piNode := lab.node("gw"), lab.node("pi")
	work := t.TempDir()
	gwData := filepath.Join(work, "gateway")

	gw := gwNode.startIn(t, work, "gateway", "--data-dir", gwData, "--mqtt-listen", "0.0.0.0:1883", "--http-listen", "[::]:8080")
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
	piNode.startIn(t, work, "agent", "--credentials", credsFile, "--data-dir", filepath.Join(work, "pi-data"),
		"--skills", bundled, "--ws-listen", "off")
	deadline := time.Now().Add(60 * time.Second)
	for {
		var d struct{ Device api.Device }
		out := gwNode.mustIn(t, work, "fleet", "device", "show", "pi-kitchen", "--data-dir", gwData, "-o", "json")
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("device show: %v\n%s", err, out)
		}
		if d.Device.Online {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi-kitchen never online across the network; last %+v", d.Device)
		}
		time.Sleep(200 * time.Millisecond) // poll interval, bounded by the deadline
	}
}
