// Package mosquittotest runs a real Mosquitto 2 with its dynamic-security
// plugin on loopback for tests: the external broker that Chorus exports to
// and keeps in sync (docs/security.md, "On an external broker").
//
// Without mosquitto or the plugin a test that starts one is skipped, except
// in CI (env CI set), where it fails: scripts/test.sh installs Mosquitto.
package mosquittotest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/gateway/loopbackport"
)

// Config says how to run Mosquitto. The zero value runs it with a plugin
// file that holds no client, so nobody can log in.
type Config struct {
	// DynSec is the plugin's dynamic-security.json, written to Dir before
	// the first start. Bootstrap makes one with only a controller account.
	DynSec []byte
	// Persist keeps Mosquitto's state in Dir, so retained messages survive
	// Restart.
	Persist bool
}

// Mosquitto is a Mosquitto process on a loopback port that stays the same
// across Restart. It is stopped in the test's cleanup, which logs its output
// when the test failed.
type Mosquitto struct {
	Addr string // 127.0.0.1:port
	// Dir holds mosquitto.conf and dynamic-security.json, which the
	// plugin of Mosquitto 2.0 reads only when it starts.
	Dir string

	bin, conf string
	out       lockedBuffer
	cmd       *exec.Cmd // nil while stopped
}

// Start runs Mosquitto with the dynamic-security plugin on a free loopback
// port and returns once it listens. The port is below the kernel's
// ephemeral range and handed to no other test (gateway/loopbackport), so a
// test that restarts Mosquitto on it can run beside others.
func Start(t testing.TB, cfg Config) *Mosquitto {
	t.Helper()
	bin, plugin := find(t)
	m := &Mosquitto{Addr: loopbackport.Addr(t), Dir: t.TempDir(), bin: bin}
	if cfg.DynSec == nil {
		cfg.DynSec = render(t)
	}
	writeFile(t, m.DynSecPath(), cfg.DynSec)
	m.conf = filepath.Join(m.Dir, "mosquitto.conf")
	writeFile(t, m.conf, []byte(m.config(cfg, plugin)))
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("mosquitto log:\n%s", m.out.String())
		}
	})
	m.start(t)
	return m
}

// DynSecPath is the plugin's file, Dir/dynamic-security.json.
func (m *Mosquitto) DynSecPath() string { return filepath.Join(m.Dir, "dynamic-security.json") }

// Restart stops Mosquitto (with SIGTERM, so it writes its persistence
// file) and starts it again on the same port.
func (m *Mosquitto) Restart(t testing.TB) {
	t.Helper()
	m.stop()
	m.start(t)
}

// WaitLogin waits until Mosquitto accepts (want) or refuses user's CONNECT
// with pass, failing t after 15s: the plugin's clients change when a
// controller syncs them, and Mosquitto takes them up again after Restart,
// both asynchronously.
func (m *Mosquitto) WaitLogin(t testing.TB, user, pass string, want bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := brokertest.Connect(t, m.Addr, user, pass, brokertest.ConnectOptions{ClientID: "login-probe"})
		if err == nil {
			c.Close()
		}
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: login accepted=%v after 15s, want %v (last error %v)", user, err == nil, want, err)
		}
		time.Sleep(50 * time.Millisecond) // bounded poll
	}
}

// Bootstrap returns a dynamic-security.json that holds only the controller
// account username, as an operator makes with mosquitto_ctrl dynsec init.
func Bootstrap(t testing.TB, username, password string) []byte {
	t.Helper()
	h, err := mosquittoexport.Hash(password)
	if err != nil {
		t.Fatal(err)
	}
	return render(t, mosquittoexport.Superuser{Username: username, Hash: h})
}

func render(t testing.TB, supers ...mosquittoexport.Superuser) []byte {
	t.Helper()
	f, err := mosquittoexport.RenderDynSec(nil, nil, supers...)
	if err != nil {
		t.Fatal(err)
	}
	return f.JSON
}

// find returns the paths of mosquitto and its dynamic-security plugin,
// skipping t outside CI and failing it in CI when either is missing.
func find(t testing.TB) (bin, plugin string) {
	t.Helper()
	bin, _ = exec.LookPath("mosquitto")
	plugin = mosquittoexport.FindPlugin()
	if bin == "" || plugin == "" {
		if os.Getenv("CI") == "" {
			t.Skip("mosquitto or its dynamic-security plugin is missing (apt-get install mosquitto)")
		}
		t.Fatal("mosquitto or its dynamic-security plugin is missing in CI: scripts/test.sh should have installed it")
	}
	return bin, plugin
}

func (m *Mosquitto) config(cfg Config, plugin string) string {
	_, port, _ := net.SplitHostPort(m.Addr)
	conf := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\nlistener %s 127.0.0.1\n", port)
	if cfg.Persist {
		conf += "persistence true\npersistence_location " + m.Dir + "/\n"
	} else {
		conf += "persistence false\n"
	}
	conf += fmt.Sprintf("plugin %s\nplugin_opt_config_file %s\nlog_dest stdout\nlog_type all\n", plugin, m.DynSecPath())
	if os.Getuid() == 0 { // mosquitto drops root for "mosquitto", who cannot read our 0600 files
		if u, err := user.Current(); err == nil {
			conf += "user " + u.Username + "\n"
		}
	}
	return conf
}

func (m *Mosquitto) start(t testing.TB) {
	t.Helper()
	m.cmd = exec.Command(m.bin, "-c", m.conf)
	m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
	if err := m.cmd.Start(); err != nil {
		m.cmd = nil
		t.Fatalf("start mosquitto: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", m.Addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s", m.Addr) // the cleanup logs its output
		}
		time.Sleep(50 * time.Millisecond) // bounded poll: nothing signals that it listens
	}
}

// stop ends Mosquitto with SIGTERM, killing it if it has not exited
// within 10s, and returns once it has. Stopping a stopped one does nothing.
func (m *Mosquitto) stop() {
	if m.cmd == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = m.cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
	m.cmd = nil
}

func writeFile(t testing.TB, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer collects Mosquitto's output: exec copies it from its own
// goroutine while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
