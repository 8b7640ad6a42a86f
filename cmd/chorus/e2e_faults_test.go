//go:build !chorus_agent

package main

// End-to-end fault tests of the fleet (issue 5, "Tests (end to end, driving
// the binary)"): an agent offline during a rollout, a tampered artifact, the
// controller killed mid-rollout, an agent killed mid-download, and a device
// removed while its agent runs. Each test runs its own gateway and agents,
// with their own data dirs, on 127.0.0.1:0.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/gateway/loopbackport"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// faultDeadline bounds every wait of these tests.
const faultDeadline = 60 * time.Second

// faultFleet is a gateway and its agents, each with its own data dir.
type faultFleet struct {
	t      *testing.T
	work   string
	gwData string
	gw     *proc
	up     configs.Up
	agents map[string]*proc
	// server, when set, is the --server the agents download artifacts
	// from (an artifactProxy in front of the gateway).
	server string
	// agentConfig, when set, is the agents' --config file.
	agentConfig string
}

// startFaultFleet starts a gateway and enrols devices with tag; it starts
// no agent (startAgent does).
func startFaultFleet(t *testing.T, tag string, devices ...string) *faultFleet {
	t.Helper()
	return startFaultFleetConfig(t, "", tag, devices...)
}

// startFaultFleetConfig is startFaultFleet with the gateway's config file
// (JSON; "" = none). The gateway listens on ports of its own below the
// kernel's ephemeral range (gateway/loopbackport), so a test that restarts it
// on them, or needs one to stay unbound once it stops, can run beside
// others: no 127.0.0.1:0 listener is handed one while it is free.
func startFaultFleetConfig(t *testing.T, config, tag string, devices ...string) *faultFleet {
	t.Helper()
	work := t.TempDir()
	f := &faultFleet{t: t, work: work, gwData: filepath.Join(work, "gateway"), agents: map[string]*proc{}}
	args := []string{"gateway", "--data-dir", f.gwData, "--mqtt-listen", loopbackport.Addr(t), "--http-listen", loopbackport.Addr(t)}
	if config != "" {
		path := filepath.Join(work, "gateway.json")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	f.gw = startChorus(t, work, args...)
	f.up = waitUp(t, f.gw, f.gwData)
	for _, d := range devices {
		f.mustFleet("device", "add", d, "--tag", tag, "--credentials-out", f.creds(d))
	}
	return f
}

func (f *faultFleet) creds(d string) string     { return filepath.Join(f.work, d+".json") }
func (f *faultFleet) agentData(d string) string { return filepath.Join(f.work, "agent-"+d) }

// agentDir is where the agent keeps its state: <data-dir>/agents/<id>.
func (f *faultFleet) agentDir(d string) string { return filepath.Join(f.agentData(d), "agents", d) }

func (f *faultFleet) installedDir(d, skill string) string {
	return filepath.Join(f.agentDir(d), "installed", skill)
}

// startAgent starts (or restarts, on the same data dir and credentials)
// the agent of d.
func (f *faultFleet) startAgent(d string) *proc {
	f.t.Helper()
	bundled := filepath.Join(f.work, "bundled-"+d)
	if err := os.MkdirAll(bundled, 0o755); err != nil {
		f.t.Fatal(err)
	}
	args := []string{"agent", "--credentials", f.creds(d), "--data-dir", f.agentData(d), "--skills", bundled, "--ws-listen", "off"}
	if f.agentConfig != "" {
		args = append(args, "--config", f.agentConfig)
	}
	if f.server != "" {
		args = append(args, "--server", f.server)
	}
	p := startChorus(f.t, f.work, args...)
	f.agents[d] = p
	return p
}

func (f *faultFleet) fleetArgs(args ...string) []string {
	return append(append([]string{"fleet"}, args...), "--data-dir", f.gwData)
}

func (f *faultFleet) runFleet(args ...string) (string, error) {
	f.t.Helper()
	return runChorus(f.t, f.work, f.fleetArgs(args...)...)
}

func (f *faultFleet) mustFleet(args ...string) string {
	f.t.Helper()
	return mustChorus(f.t, f.work, f.fleetArgs(args...)...)
}

// fleetJSON runs a fleet command with -o json and decodes its stdout
// (stderr may carry progress or notes) into v.
func (f *faultFleet) fleetJSON(v any, args ...string) {
	f.t.Helper()
	cmd := exec.Command(chorusBin, f.fleetArgs(append(args, "-o", "json")...)...)
	cmd.Dir = f.work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("chorus fleet %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		f.t.Fatalf("chorus fleet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (f *faultFleet) rollout(id int64) api.RolloutDetail {
	f.t.Helper()
	var d api.RolloutDetail
	f.fleetJSON(&d, "rollout", "show", strconv.FormatInt(id, 10))
	return d
}

// createRollout creates an install rollout without waiting for it.
func (f *faultFleet) createRollout(args ...string) int64 {
	f.t.Helper()
	var out struct{ Rollout api.Rollout }
	f.fleetJSON(&out, append([]string{"install"}, args...)...)
	if out.Rollout.ID == 0 {
		f.t.Fatalf("install %v: no rollout id", args)
	}
	return out.Rollout.ID
}

// waitRollout follows the rollout through the gateway's API until cond
// holds (fleetclient.WaitRollout, the follower `chorus fleet --wait` uses).
// A gateway that is restarted meanwhile is waited for.
func (f *faultFleet) waitRollout(id int64, what string, cond func(api.RolloutDetail) bool) api.RolloutDetail {
	f.t.Helper()
	token, err := os.ReadFile(filepath.Join(f.gwData, "operator-token"))
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := fleetclient.New(fleetclient.Config{BaseURL: f.up.HTTPURL, Token: strings.TrimSpace(string(token))})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultDeadline)
	defer cancel()
	d, err := c.WaitRollout(ctx, id, fleetclient.WaitOptions{Interval: 100 * time.Millisecond, Until: cond, Unreachable: faultDeadline})
	if err != nil {
		f.t.Fatalf("rollout %d: never %s (%v); last %+v %+v", id, what, err, d.Rollout, d.Executions)
	}
	return d
}

// waitDevice polls `fleet device show` until cond holds.
func (f *faultFleet) waitDevice(id, what string, cond func(api.Device) bool) {
	f.t.Helper()
	var out struct{ Device api.Device }
	if err := poll.Wait(context.Background(), "device "+id+" "+what, faultDeadline, func() bool {
		out.Device = api.Device{}
		f.fleetJSON(&out, "device", "show", id)
		return cond(out.Device)
	}); err != nil {
		f.t.Fatalf("%v; last %+v", err, out.Device)
	}
}

func (f *faultFleet) waitOnline(devices ...string) {
	f.t.Helper()
	for _, d := range devices {
		f.waitDevice(d, "online", func(dv api.Device) bool { return dv.Online })
	}
}

// observer connects a read-only MQTT client subscribed to filter.
func (f *faultFleet) observer(id, filter string) *brokertest.Client {
	f.t.Helper()
	c := brokertest.MustConnect(f.t, mqttAddr(f.t, f.up.MQTTURL), f.up.Observer.Username, f.up.Observer.Password,
		brokertest.ConnectOptions{ClientID: id})
	c.Sub(f.t, filter)
	return c
}

// waitLoaded waits until every device's retained skills topic reports skill loaded.
func (f *faultFleet) waitLoaded(skill string, devices ...string) {
	f.t.Helper()
	obs := f.observer("loaded-"+skill, "chorus/v1/+/skills")
	defer obs.Close()
	waitAllSkills(f.t, obs, devices, func(s map[string]string) bool { return s[skill] == "loaded" })
}

// publish writes and publishes a skill and returns its catalog entry.
func (f *faultFleet) publish(id string, extra func(dir string)) fleet.SkillVersion {
	f.t.Helper()
	dir := filepath.Join(f.work, "src", id)
	writeFleetSkill(f.t, dir, id, "1.0.0")
	if extra != nil {
		extra(dir)
	}
	var out struct{ Skill fleet.SkillVersion }
	f.fleetJSON(&out, "skill", "publish", dir)
	if out.Skill.SHA256 == "" {
		f.t.Fatalf("publish %s: no sha256", id)
	}
	return out.Skill
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.waited:
		p.waited <- err // for Cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("chorus did not die within 10s of SIGKILL")
	}
}

// exited reports whether the process has exited, without waiting.
func (p *proc) exited() bool {
	select {
	case err := <-p.waited:
		p.waited <- err
		return true
	default:
		return false
	}
}

func execOf(t *testing.T, d api.RolloutDetail, device string) api.Execution {
	t.Helper()
	for _, e := range d.Executions {
		if e.DeviceID == device {
			return e
		}
	}
	t.Fatalf("rollout %d has no execution on %s: %+v", d.Rollout.ID, device, d.Executions)
	return api.Execution{}
}

// An agent that is offline when a rollout starts keeps its execution queued
// while the others converge; restarted on the same data dir and
// credentials, it converges and the rollout succeeds.
func TestFaultsOfflineAgentConverges(t *testing.T) {
	t.Parallel()
	devices := []string{"pi-1", "pi-2", "pi-3"}
	f := startFaultFleet(t, "hall", devices...)
	for _, d := range devices {
		f.startAgent(d)
	}
	f.waitOnline(devices...)
	f.publish("fleet.offline", nil)

	if err := f.agents["pi-3"].stop(t, 15*time.Second); err != nil {
		t.Fatalf("agent pi-3 exit after SIGTERM: %v", err)
	}
	f.waitDevice("pi-3", "offline", func(d api.Device) bool { return !d.Online })

	id := f.createRollout("fleet.offline", "--tag", "hall", "--timeout", "60s")
	d := f.waitRollout(id, "2 succeeded", func(d api.RolloutDetail) bool { return d.Rollout.Counts.Succeeded == 2 })
	if d.Rollout.State != fleet.RolloutInProgress || d.Rollout.Counts.Queued != 1 {
		t.Fatalf("with pi-3 offline: rollout %s, counts %+v; want in_progress with 1 queued", d.Rollout.State, d.Rollout.Counts)
	}
	if e := execOf(t, d, "pi-3"); e.State != "queued" || e.Attempts != 0 {
		t.Fatalf("offline pi-3: execution %+v, want queued and never started", e)
	}
	if _, err := os.Stat(f.installedDir("pi-3", "fleet.offline")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("offline pi-3 has the skill: %v", err)
	}

	f.startAgent("pi-3")
	f.waitOnline("pi-3") // watch ends "not done" (exit 3) while a target is offline
	f.mustFleet("rollout", "watch", strconv.FormatInt(id, 10), "--poll-interval", "200ms")
	d = f.rollout(id)
	for _, e := range d.Executions {
		if e.State != fleet.ExecSucceeded || e.Attempts != 1 {
			t.Errorf("execution %+v: want succeeded in one attempt", e)
		}
	}
	f.waitLoaded("fleet.offline", devices...)
}

// A published artifact corrupted in the gateway's store (same size, other
// bytes) fails the device's integrity check; the failure threshold aborts
// the rollout; no device ends up with the skill.
func TestFaultsTamperedArtifactAborts(t *testing.T) {
	t.Parallel()
	devices := []string{"pi-1", "pi-2", "pi-3"}
	f := startFaultFleet(t, "hall", devices...)
	for _, d := range devices {
		f.startAgent(d)
	}
	f.waitOnline(devices...)
	skills := f.observer("skills", "chorus/v1/+/skills")
	sv := f.publish("fleet.tamper", nil)

	art := filepath.Join(f.gwData, "artifacts", sv.SHA256)
	b, err := os.ReadFile(art)
	if err != nil {
		t.Fatalf("the artifact store layout changed? %v", err)
	}
	if int64(len(b)) != sv.Size {
		t.Fatalf("stored artifact is %d bytes, catalog says %d", len(b), sv.Size)
	}
	for i := len(b) / 2; i < len(b)/2+8 && i < len(b); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(art, b, 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := f.runFleet("install", "fleet.tamper", "--tag", "hall", "--failure-threshold", "50%", "--min-executed", "1",
		"--max-in-flight", "1", "--timeout", "60s", "--wait", "--poll-interval", "200ms")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("install of a tampered artifact: %v (want exit 1)\n%s", err, out)
	}
	m := regexp.MustCompile(`rollout (\d+) created`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rollout id in:\n%s", out)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	d := f.rollout(id)
	if d.Rollout.State != fleet.RolloutAborted || !strings.Contains(d.Rollout.Reason, "failure threshold") {
		t.Errorf("rollout %s (%q), want aborted by the failure threshold", d.Rollout.State, d.Rollout.Reason)
	}
	failed := 0
	for _, e := range d.Executions {
		switch e.State {
		case fleet.ExecFailed:
			failed++
			if !strings.Contains(e.Reason, "integrity") || !strings.Contains(e.Reason, sv.SHA256) {
				t.Errorf("%s failed with %q; want the integrity failure naming sha256 %s", e.DeviceID, e.Reason, sv.SHA256)
			}
		case fleet.ExecCanceled:
			if e.Attempts != 0 {
				t.Errorf("%s: canceled after %d attempts; with --max-in-flight 1 it should never have started", e.DeviceID, e.Attempts)
			}
		default:
			t.Errorf("execution %+v: want failed or canceled", e)
		}
	}
	if failed != 1 {
		t.Errorf("%d executions failed, want 1 (the threshold aborts after the first): %+v", failed, d.Executions)
	}

	for _, dev := range devices {
		if _, err := os.Stat(f.installedDir(dev, "fleet.tamper")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: installed/fleet.tamper: %v, want it absent", dev, err)
		}
	}
	// Nothing the agents reported so far listed the skill.
	for {
		msg, ok := skills.Next(50 * time.Millisecond)
		if !ok {
			break
		}
		if bytes.Contains(msg.Payload, []byte(`"fleet.tamper"`)) {
			t.Errorf("%s listed the tampered skill: %s", msg.Topic, msg.Payload)
		}
	}
}

// The gateway killed with SIGKILL while an execution is in progress
// resumes the rollout when restarted on the same data dir and ports: no
// execution starts twice, every device converges, every agent reconnects
// with a new birth, and no retained desired document is lost.
//
// Regression: the broker's session store once lost an in-flight message's
// packet id, so after a restart its resend dropped the device's connection
// on every reconnect (broker/store_hooks.go, message).
//
// The gateway is restarted on the ports its first run was given, which are
// its own (startFaultFleet), so the test runs beside others.
func TestFaultsControllerKillResume(t *testing.T) {
	t.Parallel()
	devices := []string{"pi-1", "pi-2", "pi-3"}
	f := startFaultFleet(t, "hall", devices...)
	// pi-3's download is held in the proxy, so the kill finds pi-1 and
	// pi-2 done and pi-3 in progress whatever the machine's speed.
	px := newArtifactProxy(t, f.up.HTTPURL)
	release := px.hold("pi-3")
	f.server = px.url
	for _, d := range devices {
		f.startAgent(d)
	}
	f.waitOnline(devices...)
	f.publish("fleet.resume", nil)

	id := f.createRollout("fleet.resume", "--tag", "hall", "--max-in-flight", "1", "--timeout", "60s")
	px.waitRequest(t, "pi-3")
	before := f.rollout(id)
	if c := before.Rollout.Counts; c.Succeeded != 2 || c.InProgress != 1 {
		t.Fatalf("before the kill: counts %+v, want 2 succeeded and pi-3 in progress", c)
	}

	// What each device had said and been told before the kill.
	type said struct {
		session int64
		desired int64
	}
	stateOf := func(d string) said {
		got := f.retained(t, d)
		var b struct{ Session int64 }
		var ds struct{ Version int64 }
		if json.Unmarshal([]byte(got["birth"]), &b) != nil || json.Unmarshal([]byte(got["desired"]), &ds) != nil {
			t.Fatalf("retained state of %s: %v", d, got)
		}
		return said{b.Session, ds.Version}
	}
	before1 := map[string]said{}
	for _, d := range devices {
		before1[d] = stateOf(d)
	}

	httpAddr := strings.TrimPrefix(f.up.HTTPURL, "http://")
	f.gw.kill(t)
	if err := os.Remove(configs.UpPath(f.gwData)); err != nil {
		t.Fatal(err)
	}
	f.gw = startChorus(t, f.work, "gateway", "--data-dir", f.gwData,
		"--mqtt-listen", mqttAddr(t, f.up.MQTTURL), "--http-listen", httpAddr)
	if up := waitUp(t, f.gw, f.gwData); up.MQTTURL != f.up.MQTTURL || up.HTTPURL != f.up.HTTPURL {
		t.Fatalf("restarted gateway at %s %s, want %s %s", up.MQTTURL, up.HTTPURL, f.up.MQTTURL, f.up.HTTPURL)
	}
	release()

	d := f.waitRollout(id, "succeeded", func(d api.RolloutDetail) bool { return d.Rollout.Terminal() })
	if d.Rollout.State != fleet.RolloutSucceeded {
		t.Fatalf("after the restart: rollout %s (%s); executions %+v", d.Rollout.State, d.Rollout.Reason, d.Executions)
	}
	for _, e := range d.Executions {
		if e.State != fleet.ExecSucceeded || e.Attempts != 1 {
			t.Errorf("execution %+v: want succeeded in one attempt", e)
		}
	}
	var audit struct{ Entries []fleet.AuditEntry }
	f.fleetJSON(&audit, "audit", "--subject", fmt.Sprintf("rollout/%d/", id), "--limit", "1000")
	starts := map[string]int{}
	for _, e := range audit.Entries {
		if e.Action == "execution.in_progress" {
			starts[strings.TrimPrefix(e.Subject, fmt.Sprintf("rollout/%d/", id))]++
		}
	}
	for _, dev := range devices {
		if starts[dev] != 1 {
			t.Errorf("audit: %s started %d times, want 1 (%v)", dev, starts[dev], starts)
		}
	}
	f.waitLoaded("fleet.resume", devices...)
	// Every agent reconnected with a new session and said so in a new birth;
	// nothing desired was lost: the retained documents survived the kill.
	for _, d := range devices {
		now, was := stateOf(d), before1[d]
		if now.session <= was.session {
			t.Errorf("%s: birth session %d after the restart, want more than %d (a re-birth)", d, now.session, was.session)
		}
		if now.desired < was.desired || now.desired == 0 {
			t.Errorf("%s: desired version %d after the restart, was %d", d, now.desired, was.desired)
		}
	}
	if n := px.requests("pi-3"); n != 1 {
		t.Errorf("pi-3 asked for the artifact %d times, want 1", n)
	}
}

// An agent killed while it downloads a skill leaves a partial download and
// no installed skill; restarted, it resumes the download and loads the skill.
//
// On loopback a download of tens of MB ends in milliseconds, too fast to
// kill it reliably by watching the staging dir; so the agent downloads
// through a proxy that stalls the body after its first MiB, and the kill
// comes once the partial file holds that much. A few MiB are enough then.
func TestFaultsMidDownloadKill(t *testing.T) {
	t.Parallel()
	f := startFaultFleet(t, "hall", "pi-1")
	px := newArtifactProxy(t, f.up.HTTPURL)
	const stallAt = 1 << 20
	px.stallAfter("pi-1", stallAt)
	f.server = px.url
	agent := f.startAgent("pi-1")
	f.waitOnline("pi-1")
	sv := f.publish("fleet.big", func(dir string) {
		blob := make([]byte, 4<<20) // random: the archive stays this big
		rand.Read(blob)
		if err := os.WriteFile(filepath.Join(dir, "blob.bin"), blob, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if sv.Size < 2*stallAt {
		t.Fatalf("artifact is only %d bytes", sv.Size)
	}

	id := f.createRollout("fleet.big", "--device", "pi-1", "--timeout", "60s")
	part := filepath.Join(f.agentDir("pi-1"), "staging", sv.SHA256+".part")
	poll.Until(t, "a partial download "+part, faultDeadline, func() bool {
		fi, err := os.Stat(part)
		return err == nil && fi.Size() >= stallAt
	})
	agent.kill(t)

	fi, err := os.Stat(part)
	if err != nil || fi.Size() >= sv.Size {
		t.Fatalf("after the kill: partial download %v %v, want fewer than %d bytes", fi, err, sv.Size)
	}
	if _, err := os.Stat(f.installedDir("pi-1", "fleet.big")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("killed mid-download: installed/fleet.big: %v, want it absent", err)
	}
	if sk := f.retained(t, "pi-1")["skills"]; strings.Contains(sk, `"fleet.big"`) {
		t.Fatalf("killed mid-download: the skills topic lists fleet.big: %s", sk)
	}
	if e := execOf(t, f.rollout(id), "pi-1"); e.State != "in_progress" {
		t.Fatalf("killed mid-download: execution %+v, want in_progress", e)
	}

	px.stallAfter("pi-1", -1)
	f.startAgent("pi-1")
	f.mustFleet("rollout", "watch", strconv.FormatInt(id, 10), "--poll-interval", "200ms")
	f.waitLoaded("fleet.big", "pi-1")
	if got, err := os.ReadFile(filepath.Join(f.installedDir("pi-1", "fleet.big"), "blob.bin")); err != nil || len(got) != 4<<20 {
		t.Fatalf("installed blob: %d bytes, %v", len(got), err)
	}
	if rs := px.ranges("pi-1"); len(rs) < 2 || !strings.HasPrefix(rs[len(rs)-1], "bytes="+strconv.Itoa(stallAt)) {
		t.Errorf("after the restart the download did not resume from byte %d: requests' Range headers %q", stallAt, rs)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial download left after the install: %v", err)
	}
}

// `fleet device rm` revokes a device at once: its connected agent is
// disconnected and refused from then on, and its retained topics are cleared.
func TestFaultsDeviceRemovalRevokes(t *testing.T) {
	t.Parallel()
	f := startFaultFleet(t, "hall", "pi-1", "pi-2")
	agent := f.startAgent("pi-1")
	f.startAgent("pi-2")
	f.waitOnline("pi-1", "pi-2")
	creds := f.waitRetainedState("pi-1")
	gwLog, agentLog := len(f.gw.out.String()), len(agent.out.String())

	removed := time.Now()
	f.mustFleet("device", "rm", "pi-1")

	// The topics are cleared before rm returns. The broker publishes the
	// dropped connection's Will only after the agent's 5 s will delay.
	got := f.retained(t, "pi-1")
	if got["availability"] == "offline" && time.Since(removed) > 4*time.Second {
		delete(got, "availability") // a slow machine: the Will came already
	}
	if len(got) > 0 {
		t.Fatalf("retained pi-1 topics after the removal: %v", got)
	}
	waitOutput(t, f.gw, gwLog, "credentials revoked", "username=pi-1")
	waitOutput(t, agent, agentLog, "refused by the broker")
	c, err := brokertest.Connect(t, mqttAddr(t, f.up.MQTTURL), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: "pi-1-again"})
	if err == nil || c.Connack == nil || c.Connack.ReasonCode != 0x86 {
		t.Fatalf("pi-1's credentials after the removal: %v, want CONNACK 0x86", err)
	}
	if agent.exited() {
		t.Fatalf("the revoked agent exited; it should keep retrying:\n%s", agent.out.String())
	}
	if out, err := f.runFleet("device", "show", "pi-1"); err == nil {
		t.Fatalf("device show of a removed device succeeded:\n%s", out)
	}
	if got := f.retained(t, "pi-2"); got["availability"] != "online" {
		t.Fatalf("pi-2 after pi-1's removal: %v", got)
	}
}

// The Will of a revoked agent's dropped connection (retained "offline",
// published by the broker after the agent's will delay, agent.will_delay,
// here its minimum of 1 s) must be cleared again by the controller, so a
// removed device keeps no retained topic.
//
// Regression: mochi's sendDelayedLWT hands a Will to subscribers before it
// retains it, so the controller's clear could land first and the Will's
// "offline" stayed retained. The broker now drops the Will of a client it
// disconnects for revoked credentials (broker.SetTable).
func TestFaultsRevokedWillCleared(t *testing.T) {
	t.Parallel()
	devices := []string{"pi-1", "pi-2", "pi-3"}
	// The crowd below is 200 connections of one integration account.
	f := startFaultFleetConfig(t, `{"broker": {"limits": {"integration": {"connections": -1}}}}`, "hall", devices...)
	// The Will comes 1 s after the connection drops (agent.will_delay; 5 s
	// by default), so the watch below, will delay + 3 s, is 4 s, not 8.
	f.agentConfig = filepath.Join(f.work, "agent.json")
	writeFile(t, f.agentConfig, `{"agent": {"will_delay": 1}}`)
	for _, d := range devices {
		f.startAgent(d)
	}
	f.waitOnline(devices...)
	f.observer("live", "chorus/v1/+/availability")
	// Many subscribers widen the window between the broker's delivery of a
	// Will (the controller's inline handler comes first) and its retaining:
	// with them the bug shows in most runs.
	for i := range 200 {
		f.observer(fmt.Sprintf("crowd-%d", i), "chorus/v1/+/availability")
	}
	for _, d := range devices {
		f.waitRetainedState(d)
	}
	for _, d := range devices {
		f.mustFleet("device", "rm", d)
	}
	// The agents' Will delay is 1 s: watch the retained state for 3 s longer
	// than that. It must become empty and stay empty: no late "offline".
	removed := time.Now()
	for _, d := range devices {
		var got map[string]string
		if err := poll.Wait(context.Background(), "no retained "+d+" topics after the removal", 10*time.Second, func() bool {
			got = f.retained(t, d)
			return len(got) == 0
		}); err != nil {
			t.Fatalf("%v: %v", err, got)
		}
	}
	for time.Since(removed) < 4*time.Second {
		for _, d := range devices {
			if got := f.retained(t, d); len(got) > 0 {
				t.Fatalf("retained %s topics reappeared %s after the removal: %v", d, time.Since(removed), got)
			}
		}
		time.Sleep(250 * time.Millisecond) // poll interval, bounded by the 4 s window
	}
}

// waitRetainedState waits until the device's availability ("online") and
// skills are retained, and returns its credentials.
func (f *faultFleet) waitRetainedState(device string) configs.AgentCredentials {
	t := f.t
	t.Helper()
	var got map[string]string
	if err := poll.Wait(context.Background(), "retained "+device+" online with its skills", faultDeadline, func() bool {
		got = f.retained(t, device)
		return got["availability"] == "online" && got["skills"] != ""
	}); err != nil {
		t.Fatalf("%v: %v", err, got)
	}
	var creds configs.AgentCredentials
	b, err := os.ReadFile(f.creds(device))
	if err != nil || json.Unmarshal(b, &creds) != nil {
		t.Fatalf("credentials of %s: %v %s", device, err, b)
	}
	return creds
}

// retained returns the retained state topics of device (kind → payload),
// read by a fresh observer. A retained message is delivered right after
// its subscription; the gateway's own retained availability, subscribed
// second, marks the end of the device's. Both subscriptions are QoS 0:
// mochi refuses a SUBSCRIBE whose packet id one of its own in-flight QoS 1
// publishes uses (0x91), though the two sides' ids are independent.
func (f *faultFleet) retained(t *testing.T, device string) map[string]string {
	t.Helper()
	c := brokertest.MustConnect(t, mqttAddr(t, f.up.MQTTURL), f.up.Observer.Username, f.up.Observer.Password,
		brokertest.ConnectOptions{ClientID: "retained-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	defer c.Close()
	for _, filter := range []string{"chorus/v1/" + device + "/#", "chorus/v1/gateway/availability"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 0}}})
		cancel()
		if err != nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 0 {
			t.Fatalf("subscribe %s: %v %+v", filter, err, sa)
		}
	}
	got := map[string]string{}
	for {
		m, ok := c.Next(10 * time.Second)
		if !ok {
			t.Fatalf("no retained gateway availability")
		}
		if m.Topic == "chorus/v1/gateway/availability" {
			return got
		}
		if kind := strings.TrimPrefix(m.Topic, "chorus/v1/"+device+"/"); m.Retain && len(m.Payload) > 0 && !strings.Contains(kind, "/") {
			got[kind] = string(m.Payload)
		}
	}
}

// waitOutput waits until a line of p's output after offset contains every one of subs.
func waitOutput(t *testing.T, p *proc, offset int, subs ...string) {
	t.Helper()
	err := poll.Wait(context.Background(), fmt.Sprintf("a line with %q in the output", subs), 30*time.Second, func() bool {
		for _, line := range strings.Split(p.out.String()[offset:], "\n") {
			if containsAll(line, subs) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, p.out.String()[offset:])
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// artifactProxy stands between the agents and the gateway's HTTP API, so a
// test can hold a device's artifact request or stall its body. Devices are
// told apart by their Basic auth username.
type artifactProxy struct {
	url      string
	upstream string
	client   *http.Client

	// mu guards the rules and the record below.
	mu     sync.Mutex
	held   map[string]chan struct{} // closed to let the device's requests go on
	stalls map[string]int64         // bytes after which the body stalls until the client leaves
	seen   map[string][]string      // each request's Range header, by device
	notify chan struct{}            // a request arrived
}

func newArtifactProxy(t *testing.T, upstream string) *artifactProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &artifactProxy{
		url: "http://" + ln.Addr().String(), upstream: upstream,
		// No keep-alive: the gateway may be restarted between two requests.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		held:   map[string]chan struct{}{}, stalls: map[string]int64{}, seen: map[string][]string{},
		notify: make(chan struct{}, 1),
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		for dev, ch := range p.held {
			close(ch)
			delete(p.held, dev)
		}
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return p
}

// hold makes the device's requests wait, before reaching the gateway, until
// the returned release is called.
func (p *artifactProxy) hold(device string) (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.held[device] = ch
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.held[device] == ch {
			close(ch)
			delete(p.held, device)
		}
	}
}

// stallAfter stalls the device's response bodies after n bytes (n < 0: never).
func (p *artifactProxy) stallAfter(device string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n < 0 {
		delete(p.stalls, device)
		return
	}
	p.stalls[device] = n
}

func (p *artifactProxy) ranges(device string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[device]...)
}

func (p *artifactProxy) requests(device string) int { return len(p.ranges(device)) }

// waitRequest waits until the device has asked for an artifact.
func (p *artifactProxy) waitRequest(t *testing.T, device string) {
	t.Helper()
	deadline := time.After(faultDeadline)
	for p.requests(device) == 0 {
		select {
		case <-p.notify:
		case <-deadline:
			t.Fatalf("%s never asked for an artifact", device)
		}
	}
}

func (p *artifactProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dev, _, _ := r.BasicAuth()
	p.mu.Lock()
	p.seen[dev] = append(p.seen[dev], r.Header.Get("Range"))
	held, stall := p.held[dev], p.stalls[dev]
	_, stalls := p.stalls[dev]
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if !stalls {
		io.Copy(w, resp.Body)
		return
	}
	io.CopyN(w, resp.Body, stall)
	http.NewResponseController(w).Flush()
	<-r.Context().Done() // stalled until the client goes away
}
