//go:build !chorus_agent

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/enrol"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// chorusOut runs one chorus command (bounded by 60 s) and returns its
// stdout alone, and its combined output for messages.
func chorusOut(t *testing.T, dir string, args ...string) (stdout, all string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBin, args...)
	cmd.Dir = dir
	var out, both lockedBuffer
	cmd.Stdout = multiWriter{&out, &both}
	cmd.Stderr = &both
	err = cmd.Run()
	return out.String(), both.String(), err
}

type multiWriter []interface{ Write([]byte) (int, error) }

func (m multiWriter) Write(p []byte) (int, error) {
	for _, w := range m {
		w.Write(p)
	}
	return len(p), nil
}

// Join-token enrolment driven as a Pi owner would: a gateway, a token,
// `chorus agent join TOKEN` in its own data dir, the device pending with no
// MQTT access until accepted, then online; an --approve token online at
// once; used-up, revoked and expired tokens refused.
func TestJoinE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, g, gw)
	fleetArgs := func(args ...string) []string { return append(args, "--data-dir", gw) }
	newToken := func(args ...string) string {
		t.Helper()
		out, all, err := chorusOut(t, work, fleetArgs(append([]string{"fleet", "token", "create"}, args...)...)...)
		if err != nil || !strings.Contains(all, "chorus agent join") {
			t.Fatalf("token create %v: %v\n%s", args, err, all)
		}
		return strings.TrimSpace(out)
	}
	device := func(id string) (api.Device, bool) {
		out, _, err := chorusOut(t, work, fleetArgs("fleet", "device", "show", id, "-o", "json")...)
		var d api.DeviceResponse
		if err != nil || json.Unmarshal([]byte(out), &d) != nil {
			return api.Device{}, false
		}
		return d.Device, true
	}
	join := func(token, dataDir, id string) *proc {
		return startChorus(t, work, "agent", "join", token, "--data-dir", dataDir, "--device", id,
			"--skills", t.TempDir(), "--ws-listen", "off")
	}
	// Made first, so that its minute has passed by the end of the test.
	expiring := newToken("--ttl", "3s")

	// A token that needs the operator's accept.
	token := newToken("--tag", "kitchen")
	if tok, err := api.ParseJoinToken(token); err != nil || tok.URL != up.HTTPURL {
		t.Fatalf("token %q: %+v, %v; want the gateway's URL %s", token, tok, err, up.HTTPURL)
	}
	dataA := filepath.Join(work, "agent-a")
	a := join(token, dataA, "pi-join")
	var pendingID string
	poll.Until(t, "pi-join pending", 60*time.Second, func() bool {
		out, _, err := chorusOut(t, work, fleetArgs("fleet", "device", "pending", "-o", "json")...)
		var pl api.PendingDevicesResponse
		if err != nil || json.Unmarshal([]byte(out), &pl) != nil || len(pl.Pending) != 1 || pl.Pending[0].DeviceID != "pi-join" {
			return false
		}
		pendingID = pl.Pending[0].ID
		return true
	})
	poll.Until(t, "the agent saying it waits", 60*time.Second, func() bool { return strings.Contains(a.out.String(), "chorus fleet device accept "+pendingID) })

	// Pending: not in the registry, and the broker refuses it with whatever it holds.
	if _, ok := device("pi-join"); ok {
		t.Fatal("a pending device is in the registry")
	}
	var pend struct {
		Ticket api.PendingTicket `json:"ticket"`
	}
	b, err := os.ReadFile(enrol.PendingPath(dataA))
	if err != nil || json.Unmarshal(b, &pend) != nil {
		t.Fatalf("pending file: %v", err)
	}
	tok, _ := api.ParseJoinToken(token)
	for _, pass := range []string{pend.Ticket.Secret, tok.Secret} {
		if c, err := brokertest.Connect(t, mqttAddr(t, up.MQTTURL), "pi-join", pass, brokertest.ConnectOptions{ClientID: "x"}); err == nil {
			c.Close()
			t.Fatal("the broker accepted a pending device's CONNECT")
		}
	}

	out, all, err := chorusOut(t, work, fleetArgs("fleet", "device", "accept", pendingID)...)
	if err != nil || !strings.Contains(out, "pi-join accepted") {
		t.Fatalf("accept: %v\n%s", err, all)
	}
	poll.Until(t, "pi-join online", 60*time.Second, func() bool { d, ok := device("pi-join"); return ok && d.Online && d.Tags[0] == "kitchen" })
	// Enrolled, the agent runs without the token on its command line,
	// where its skills could read it (/proc/<pid>/cmdline).
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", a.cmd.Process.Pid))
	if err != nil || strings.Contains(string(cmdline), token) || !strings.Contains(string(cmdline), "--credentials") {
		t.Errorf("the enrolled agent's command line %q (%v): want no token, and --credentials", strings.ReplaceAll(string(cmdline), "\x00", " "), err)
	}
	fi, err := os.Stat(enrol.CredentialsPath(dataA))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, %v", fi, err)
	}

	// An --approve token: online at once, no accept.
	auto := newToken("--approve", "--tag", "hall")
	join(auto, filepath.Join(work, "agent-b"), "pi-auto")
	poll.Until(t, "pi-auto online", 60*time.Second, func() bool { d, ok := device("pi-auto"); return ok && d.Online })

	// Refused tokens: the agent exits with an error that names the fix.
	refused := func(token, want string) {
		t.Helper()
		_, all, err := chorusOut(t, work, "agent", "join", token, "--data-dir", filepath.Join(work, "agent-x"), "--device", "pi-x", "--ws-listen", "off")
		if err == nil || !strings.Contains(all, want) || !strings.Contains(all, "chorus fleet token create") {
			t.Errorf("join with a %s token: %v\n%s", want, err, all)
		}
	}
	refused(auto, "used up")
	revoked := newToken()
	rtok, _ := api.ParseJoinToken(revoked)
	if _, all, err := chorusOut(t, work, fleetArgs("fleet", "token", "revoke", rtok.ID)...); err != nil {
		t.Fatalf("revoke: %v\n%s", err, all)
	}
	refused(revoked, "revoked")
	refused("chorusjoin1_garbage", "damaged")
	poll.Until(t, "the 3s token expired", 60*time.Second, func() bool {
		out, _, _ := chorusOut(t, work, fleetArgs("fleet", "token", "list")...)
		return strings.Contains(out, "expired")
	})
	refused(expiring, "expired")
	if _, ok := device("pi-x"); ok {
		t.Error("a refused join added a device")
	}
	if _, err := os.Stat(filepath.Join(work, "agent-x")); !os.IsNotExist(err) {
		t.Errorf("refused joins left their data dir behind: %v", err)
	}
	if audit := mustChorus(t, work, fleetArgs("fleet", "audit")...); !strings.Contains(audit, "device.join") || !strings.Contains(audit, "token.revoke") {
		t.Errorf("audit lacks the joins:\n%s", audit)
	}
}
