//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// TestSIGHUPE2E: SIGHUP neither stops `chorus up` (gateway and agent in one
// process) nor goes unnoticed: it is logged as ignored, the gateway still
// answers, and SIGTERM still stops it cleanly (issue 16 §7).
func TestSIGHUPE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	p := startChorus(t, work, "up", "--data-dir", data, "--skills", mustAbs(t, "../../configs/skills"),
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	up := waitUp(t, p, data)
	for n := 1; n <= 2; n++ { // one at a time: a pending SIGHUP absorbs a second one
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitCount(t, p, "SIGHUP ignored", n)
	}
	resp, err := http.Get(up.HTTPURL + "/healthz")
	if err != nil {
		t.Fatalf("gateway after SIGHUP: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz after SIGHUP: %d", resp.StatusCode)
	}
	if err := p.stop(t, 30*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v (want 0)", err)
	}
}

// TestDataDirPrivateE2E: every file of the gateway's data dir that holds a
// secret or its hash (the fleet registry and its WAL and shared memory, the
// broker's store, up.json, the local credentials, the operator token) is
// 0600, in 0700 directories (issue 16 §7).
func TestDataDirPrivateE2E(t *testing.T) {
	t.Parallel()
	f := startFaultFleet(t, "hall", "pi-1")
	f.mustFleet("device", "add", "pi-2", "--credentials-out", f.creds("pi-2"))
	secret := map[string]bool{"fleet.db": true, "fleet.db-wal": true, "fleet.db-shm": true,
		"broker.db": true, "broker.db-wal": true, "broker.db-shm": true,
		"up.json": true, "local-credentials.json": true, "operator-token": true}
	seen := map[string]bool{}
	err := filepath.WalkDir(f.gwData, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && path != filepath.Join(f.gwData, "artifacts"):
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("directory %s is %o, want 700", path, fi.Mode().Perm())
			}
		case secret[d.Name()]:
			seen[d.Name()] = true
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s is %o, want 600", path, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fleet.db", "fleet.db-wal", "fleet.db-shm", "broker.db", "up.json", "operator-token"} {
		if !seen[name] {
			t.Errorf("%s not found under %s: the check saw nothing to check", name, f.gwData)
		}
	}
	if fi, err := os.Stat(f.gwData); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v %v, want 700", fi.Mode(), err)
	}
}

// waitCount waits until p's output holds s at least n times, failing if p
// exits first.
func waitCount(t *testing.T, p *proc, s string, n int) {
	t.Helper()
	err := poll.Wait(context.Background(), fmt.Sprintf("%q %d times in the output", s, n), 30*time.Second, func() bool {
		if p.exited() {
			t.Fatalf("chorus exited before writing %q (%d times):\n%s", s, n, p.out.String())
		}
		return strings.Count(p.out.String(), s) >= n
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, p.out.String())
	}
}

// TestSecondAgentWSPortE2E: an agent whose websocket address is taken (a
// second agent on one machine) stops with an error that names --ws-listen
// (issue 16 §8).
func TestSecondAgentWSPortE2E(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	work := t.TempDir()
	p := startChorus(t, work, "up", "--data-dir", filepath.Join(work, "data"), "--skills", mustAbs(t, "../../configs/skills"),
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", taken.Addr().String())
	select {
	case err := <-p.waited:
		p.waited <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("exit %v, want non-zero", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chorus up kept running with its websocket address taken")
	}
	if out := p.out.String(); !strings.Contains(out, "address already in use") || !strings.Contains(out, "--ws-listen 127.0.0.1:PORT") {
		t.Fatalf("the error does not say to use --ws-listen:\n%s", out)
	}
}

// TestCleanInterruptE2E: Ctrl-C (SIGINT) on a `chorus up` whose skills run
// ends with exit 0 and without a WARN or ERROR line (issue 16 §8): skills
// disconnecting while the broker writes to them is normal at a stop.
func TestCleanInterruptE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	p := startChorus(t, work, "up", "--data-dir", data, "--device", "pi-int", "--skills", mustAbs(t, "../../configs/skills"),
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	up := waitUp(t, p, data)
	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-int/skills")
	waitSkills(t, obs, "pi-int", func(s map[string]string) bool {
		return s["hello.chorus"] == "loaded" && s["echo-hub.chorus"] == "loaded"
	})
	obs.Close()
	waitCount(t, p, "Stop with Ctrl-C.", 1) // up, as a person sees it before pressing Ctrl-C
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.waited:
		p.waited <- err
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v, want 0\n%s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chorus up did not stop within 30s of SIGINT")
	}
	if os.Getenv("CHORUS_DUMP") != "" {
		t.Log(p.out.String())
	}
	for _, line := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Errorf("a clean Ctrl-C logged: %s", line)
		}
	}
}
