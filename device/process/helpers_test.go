package process_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const testDevice = "pi-kitchen"

// writeSkill creates <root>/<id>/ with a SKILL.md whose exec is run.sh
// holding script, and returns the skill as discovery sees it.
func writeSkill(t *testing.T, root, id, script string) discovery.Skill {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "---\nname: " + id + "\nexec: run.sh\nready: on-start\n---\nA test skill.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	cat, err := discovery.Discover(discovery.Config{Bundled: []string{root}})
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	s, ok := cat.Get(id)
	if !ok || !s.Valid {
		t.Fatalf("skill %s not discovered as valid: %+v", id, s)
	}
	return s
}

// testConfig returns a launcher config with a fresh device key.
func testConfig(t *testing.T) (process.Config, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return process.Config{
		MQTTURL:      "mqtt://127.0.0.1:1883",
		Device:       testDevice,
		Key:          priv,
		KeyVersion:   1,
		SettingsRoot: filepath.Join(t.TempDir(), "settings"),
		Bin:          "/usr/local/bin/chorus",
		StopGrace:    time.Second,
	}, pub
}

// startSkill starts a skill from script and stops it at cleanup.
func startSkill(t *testing.T, cfg process.Config, script string) (*process.Process, discovery.Skill) {
	t.Helper()
	s := writeSkill(t, t.TempDir(), "test.skill", script)
	p, err := process.NewLauncher(cfg).Start(s)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p, s
}

// waitDone waits for p to exit, at most d.
func waitDone(t *testing.T, p *process.Process, d time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(d):
		t.Fatalf("skill process %d did not exit within %s; tail %q", p.PID(), d, p.Tail())
	}
}

// waitTail waits until the process has printed line.
func waitTail(t *testing.T, p *process.Process, line string) {
	t.Helper()
	poll.Until(t, "output line "+line, 5*time.Second, func() bool {
		for _, l := range p.Tail() {
			if l == line {
				return true
			}
		}
		return false
	})
}

// alive reports whether pid is a live process (a zombie counts as dead).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// the state follows the parenthesised command name
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// logBuffer is a concurrency-safe buffer for a JSON slog handler.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }
