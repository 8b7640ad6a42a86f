//go:build !chorus_agent

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// TestSkillGrantE2E drives `chorus fleet grant` against a real gateway the
// way an operator would (docs/security.md, "Skill grants"). Promise: a skill
// connecting with the credentials its agent mints is refused a management
// type until the operator grants it, then allowed on that device only, and
// refused again once the grant is removed; a grant of a type that is not
// restricted fails with a clear message and stores nothing.
func TestSkillGrantE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, g, gw)
	fleet := func(args ...string) []string { return append(append([]string{"fleet"}, args...), "--data-dir", gw) }

	credsFile := filepath.Join(work, "pi-1.json")
	mustChorus(t, work, fleet("device", "add", "pi-1", "--credentials-out", credsFile)...)
	raw, err := os.ReadFile(credsFile)
	if err != nil {
		t.Fatal(err)
	}
	var creds configs.AgentCredentials
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	key, err := creds.PrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	sk := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), skillcred.Username("pi-1", "installer"),
		skillcred.Mint(key, creds.KeyVersion, "pi-1", "installer"), brokertest.ConnectOptions{ClientID: "pi-1-installer"})
	install := func() byte {
		return sk.Pub(t, "chorus/v1/pi-1/bus/ovos.skills.install", []byte(`{"type":"ovos.skills.install","data":{},"context":{}}`), false)
	}

	if rc := install(); rc != 0x87 {
		t.Fatalf("before the grant: reason 0x%02x, want 0x87", rc)
	}
	out := mustChorus(t, work, fleet("grant", "add", "installer", "--allow", "ovos.skills.install*", "--device", "pi-1")...)
	if !strings.Contains(out, "installer on device pi-1 may emit: ovos.skills.install*") {
		t.Fatalf("grant add said:\n%s", out)
	}
	if rc := install(); rc != 0 {
		t.Fatalf("after the grant: reason 0x%02x, want 0", rc)
	}
	out, err = runChorus(t, work, fleet("grant", "add", "installer", "--allow", "speak")...)
	if err == nil || !strings.Contains(out, `"speak" is not restricted for skills`) {
		t.Fatalf("grant of an unrestricted type: %v\n%s", err, out)
	}
	list := mustChorus(t, work, fleet("grant", "list", "-o", "json")...)
	var got struct {
		Grants []struct {
			Skill, Device string
			Allow         []string
		}
	}
	if err := json.Unmarshal([]byte(list), &got); err != nil || len(got.Grants) != 1 || got.Grants[0].Device != "pi-1" {
		t.Fatalf("grant list: %v\n%s", err, list)
	}
	mustChorus(t, work, fleet("grant", "rm", "installer", "--device", "pi-1")...)
	if rc := install(); rc != 0x87 {
		t.Fatalf("after removing the grant: reason 0x%02x, want 0x87", rc)
	}
}
