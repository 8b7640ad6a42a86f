//go:build !chorus_agent

package main

// End-to-end tests: build the chorus binary once and drive it as a user would.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/cmd/chorus/chorusbin"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/poll"
	"github.com/chorus-edge/chorus/gateway/testparallel"
)

var chorusBin string

// e2eParallel is how many parallel tests run at once unless -parallel is
// given, when GOMAXPROCS is lower: an end-to-end test's time is mostly its
// chorus processes waiting (keepalives, Will delays, rollouts), not this
// process's CPU, so on a 2-core machine four at a time roughly halve the
// package's time (issue 15).
const e2eParallel = 4

func TestMain(m *testing.M) {
	testparallel.AtLeast(e2eParallel)
	chorusbin.Main(m, &chorusBin, (*testing.M).Run)
}

// proc is a running chorus command.
type proc struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	waited chan error
}

func startChorus(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	return startProc(t, dir, exec.Command(chorusBin, args...))
}

// startProc starts cmd (chorus, or a wrapper around it such as prlimit) with
// debug logs, collecting its output; the test's cleanup kills it and, when
// the test failed, logs what it wrote. Agents run their skills under uids
// of a range of their own (tests run at once on one host), and dir, where
// their data lives, is made reachable for those uids.
func startProc(t *testing.T, dir string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, out: &lockedBuffer{}, waited: make(chan error, 1)}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	skillusertest.Open(t, dir)
	p.cmd.Env = append(os.Environ(), "CHORUS_LOG_LEVEL=debug", "CHORUS_SKILL_UID_RANGE="+skillusertest.Range(t).String())
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.waited
		if t.Failed() {
			t.Logf("%s output:\n%s", strings.Join(cmd.Args, " "), p.out.String())
		}
	})
	return p
}

// waitUp polls for up.json and returns it.
func waitUp(t *testing.T, p *proc, dataDir string) configs.Up {
	t.Helper()
	var up configs.Up
	poll.Until(t, "up.json in "+dataDir, 30*time.Second, func() bool {
		select {
		case err := <-p.waited:
			t.Fatalf("chorus exited early: %v\n%s", err, p.out.String())
		default:
		}
		var err error
		up, err = configs.ReadUp(configs.UpPath(dataDir))
		return err == nil
	})
	return up
}

func (p *proc) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.waited:
		p.waited <- err // for Cleanup
		return err
	case <-time.After(within):
		// Go's runtime answers SIGQUIT by printing every goroutine's stack
		// and exiting: where the stop hangs is then in the output below.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case err := <-p.waited:
			p.waited <- err
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("chorus did not stop within %s (its goroutines at that moment are in its output below)", within)
		return nil
	}
}

func mqttAddr(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

func TestUpE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	p := startChorus(t, work, "up", "--data-dir", data, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
	up := waitUp(t, p, data)

	st, err := os.Stat(configs.UpPath(data))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("up.json mode: %v %v", st.Mode(), err)
	}

	resp, err := http.Get(up.HTTPURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var health map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &health) != nil || health["status"] != "ok" || health["version"] == "" {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}

	addr := mqttAddr(t, up.MQTTURL)
	c, err := brokertest.Connect(t, addr, up.Observer.Username, "wrong", brokertest.ConnectOptions{ClientID: "bad"})
	if err == nil || c.Connack == nil || c.Connack.ReasonCode != 0x86 {
		t.Fatalf("wrong password: want CONNACK 0x86, got %v", err)
	}
	obs := brokertest.MustConnect(t, addr, up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "observer"})
	obs.Sub(t, "chorus/v1/gateway/availability")
	if m := obs.Expect(t, "chorus/v1/gateway/availability", 5*time.Second); string(m.Payload) != "online" {
		t.Fatalf("gateway availability = %q", m.Payload)
	}
	// The observer is read-only (README): no bus message, no skill switch,
	// no install request, no Home Assistant status (issue 16 §7).
	for _, tp := range []string{"chorus/v1/x/bus/speak", "chorus/v1/x/skill/hello.chorus/set",
		"chorus/v1/x/skill/hello.chorus/update/set", "homeassistant/status", "chorus/v1/x/desired"} {
		if rc := obs.Pub(t, tp, []byte("OFF"), false); rc != 0x87 {
			t.Fatalf("observer publish on %s: reason %#x, want 0x87 (not authorized)", tp, rc)
		}
	}
	obs.Close()
	// The banner's mosquitto_sub line names the real host and port and the
	// observer account, with no placeholder left (issue 16 §8).
	port := up.MQTTURL[strings.LastIndex(up.MQTTURL, ":")+1:]
	waitCount(t, p, "Stop with Ctrl-C.", 1)
	banner := p.out.String()
	if strings.Contains(banner, "<host>") || strings.Contains(banner, "<port>") ||
		!strings.Contains(banner, "mosquitto_sub -V 5 -h 127.0.0.1 -p "+port+" -u "+up.Observer.Username) {
		t.Fatalf("banner without a usable mosquitto_sub line:\n%s", banner)
	}

	start := time.Now()
	if err := p.stop(t, 5*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", err, p.out.String())
	}
	t.Logf("stopped in %s", time.Since(start))
}

func TestUpPortInUse(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	first := startChorus(t, work, "up", "--data-dir", filepath.Join(work, "a"), "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	up := waitUp(t, first, filepath.Join(work, "a"))
	second := startChorus(t, work, "up", "--data-dir", filepath.Join(work, "b"), "--mqtt-listen", mqttAddr(t, up.MQTTURL), "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	select {
	case err := <-second.waited:
		second.waited <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("second up: %v, want a non-zero exit", err)
		}
		if !strings.Contains(second.out.String(), "address already in use") {
			t.Fatalf("no clear error:\n%s", second.out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("second chorus up on a used port kept running")
	}
}

func TestGatewayBadConfig(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cfg := filepath.Join(work, "chorus.json")
	os.WriteFile(cfg, []byte(`{"broker": {"max_packet_size": "large"}}`), 0o644)
	out, err := exec.Command(chorusBin, "gateway", "--config", cfg, "--data-dir", work).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "broker.max_packet_size") {
		t.Fatalf("bad config: %v\n%s", err, out)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(chorusBin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "chorus ") || !strings.Contains(string(out), "go1.") || !strings.Contains(string(out), "commit ") {
		t.Fatalf("version: %v\n%s", err, out)
	}
}
