//go:build !chorus_agent

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// TestMosquittoDynsecLiveE2E runs `chorus gateway --broker external
// --mosquitto-dynsec` on a real Mosquitto 2 whose dynamic-security plugin
// starts with only the controller's account, and never exports nor restarts
// it (docs/security.md, "On an external broker"). Promise: the local
// accounts log in once the gateway is up; a device added afterwards logs in;
// its skill, installed by a rollout, opens its own MQTT session; an
// integration added later logs in; a rotation refuses the old secret and
// admits the new one; removing the device refuses the device and its skill.
//
// Mosquitto listens on a port of its own, picked before it starts
// (mosquittotest, gateway/loopbackport), so the test runs beside others.
func TestMosquittoDynsecLiveE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := startMosquittoGateway(t, work, "--mosquitto-dynsec")
	mq, ctlPass, up, fleetArgs := gw.mq, gw.ctlPass, gw.up, gw.fleetArgs
	addr := mq.Addr

	mq.WaitLogin(t, up.Observer.Username, up.Observer.Password, true)
	mq.WaitLogin(t, up.Operator.Username, up.Operator.Password, true)

	credsPath := filepath.Join(work, "pi-1.json")
	mustChorus(t, work, fleetArgs("fleet", "device", "add", "pi-1", "--tag", "kitchen", "--credentials-out", credsPath)...)
	creds, err := configs.ReadAgentCredentials(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	mq.WaitLogin(t, "pi-1", creds.Password, true)

	agentConfig := filepath.Join(work, "agent.json")
	writeFile(t, agentConfig, `{"skills": {"credentials": "derived"}}`)
	agent := startChorus(t, work, "agent", "--config", agentConfig, "--credentials", credsPath,
		"--data-dir", filepath.Join(work, "agent-pi-1"), "--skills", t.TempDir(), "--ws-listen", "off")
	skill := filepath.Join(work, "fleet.hello")
	writeFleetSkill(t, skill, "fleet.hello", "1.0.0")
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", skill)...)
	obs := brokertest.MustConnect(t, addr, "controller", ctlPass, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")
	out := mustChorus(t, work, fleetArgs("fleet", "install", "fleet.hello", "--device", "pi-1", "--timeout", "60s")...)
	var rollout int
	if _, err := fmt.Sscanf(out, "rollout %d created", &rollout); err != nil {
		t.Fatalf("install output %q: %v", out, err)
	}
	waitOnline(t, work, gw.dataDir, map[string]bool{"pi-1": true}) // watch ends "not done" while it is offline
	mustChorus(t, work, fleetArgs("fleet", "rollout", "watch", fmt.Sprint(rollout))...)
	waitAllSkills(t, obs, []string{"pi-1"}, func(s map[string]string) bool { return s["fleet.hello"] == "loaded" })
	checkSkillAnswers(t, addr, ctlPass, "pi-1") // the skill's own session subscribes and publishes
	skillUser := skillcred.Username("pi-1", "fleet.hello")
	skillPass := skillcred.MintDerived(skillcred.DeriveKey(creds.Password), creds.KeyVersion, "pi-1", "fleet.hello")
	mq.WaitLogin(t, skillUser, skillPass, true)

	out = mustChorus(t, work, fleetArgs("fleet", "integration", "add", "ha", "--allow", "speak", "-o", "json")...)
	var ia api.IntegrationAdded
	if err := json.Unmarshal([]byte(out), &ia); err != nil {
		t.Fatalf("integration add output %q: %v", out, err)
	}
	mq.WaitLogin(t, ia.Credentials.Username, ia.Credentials.Password, true)

	// The agent would reconnect with the old secret and be refused: stop it first.
	if err := agent.stop(t, 10*time.Second); err != nil {
		t.Logf("agent stopped: %v", err)
	}
	mustChorus(t, work, fleetArgs("fleet", "device", "rotate", "pi-1", "--credentials-out", credsPath)...)
	rotated, err := configs.ReadAgentCredentials(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	mq.WaitLogin(t, "pi-1", creds.Password, false)
	mq.WaitLogin(t, skillUser, skillPass, false)
	mq.WaitLogin(t, "pi-1", rotated.Password, true)
	rotatedSkill := skillcred.MintDerived(skillcred.DeriveKey(rotated.Password), rotated.KeyVersion, "pi-1", "fleet.hello")
	mq.WaitLogin(t, skillUser, rotatedSkill, true)

	mustChorus(t, work, fleetArgs("fleet", "device", "rm", "pi-1")...)
	mq.WaitLogin(t, "pi-1", rotated.Password, false)
	mq.WaitLogin(t, skillUser, rotatedSkill, false)
	mq.WaitLogin(t, ia.Credentials.Username, ia.Credentials.Password, true) // untouched
}
