//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/skillcred"
	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestSkillExampleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no name", args: []string{"skill", "example"}, want: "accepts 1 arg"},
		{name: "unknown", args: []string{"skill", "example", "nope"}, want: "unknown (want one of "},
		{name: "not under the agent", args: []string{"skill", "example", "hello"}, want: "missing CHORUS_MQTT_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			a := newApp(&stdout, &stderr, func(string) string { return "" })
			if code := a.execute(context.Background(), tt.args); code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestSkillExampleRuns runs `chorus skill example hello` in-process with the
// environment the agent would give it, sees it announce readiness, and stops
// it as SIGTERM would (its context ends): exit code 0.
func TestSkillExampleRuns(t *testing.T) {
	t.Parallel()
	const dev, skill = "kitchen", "hello.chorus"
	d := brokertest.NewDevice(t, dev)
	b := brokertest.Start(t, broker.Config{}, d.Account)
	agent := brokertest.MustConnect(t, b.Addr(), dev, d.Secret, brokertest.ConnectOptions{ClientID: "agent", CleanStart: true})
	filter, _ := topic.BusFilter(dev)
	agent.Sub(t, filter)
	prefix, _ := topic.BusPrefix(dev)
	env := map[string]string{
		"CHORUS_MQTT_URL": b.URL(), "CHORUS_DEVICE": dev, "CHORUS_SKILL_ID": skill, "CHORUS_BUS_PREFIX": prefix,
		"CHORUS_USERNAME": skillcred.Username(dev, skill), "CHORUS_PASSWORD": skillcred.Mint(d.Key, 1, dev, skill),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	a := newApp(&stdout, &stderr, func(k string) string { return env[k] })
	code := make(chan int, 1)
	go func() { code <- a.execute(ctx, []string{"skill", "example", "hello"}) }()

	ready, _ := topic.Bus(dev, "chorus.skill.ready")
	m, err := envelope.Decode(agent.Expect(t, ready, 10*time.Second).Payload)
	if err != nil || m.Data["skill_id"] != skill {
		t.Fatalf("ready = %+v (%v), want skill_id %s", m, err, skill)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code = %d, want 0; stderr %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("skill example did not stop")
	}
}

// TestSkillPack packs the same skill twice, from copies with other mtimes:
// the same bytes, named after SKILL.md, with the sha256 and size printed.
func TestSkillPack(t *testing.T) {
	work := t.TempDir()
	a, b := filepath.Join(work, "a"), filepath.Join(work, "b")
	copyDir(t, "../../configs/skills/hello.chorus", a)
	copyDir(t, "../../configs/skills/hello.chorus", b)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(b, "SKILL.md"), old, old)
	os.Chtimes(filepath.Join(b, "run.sh"), old, old)

	t.Chdir(work)
	first := chorus(context.Background(), nil, "skill", "pack", a)
	second := chorus(context.Background(), nil, "skill", "pack", b, "-o", "again.tgz")
	if first.code != 0 || second.code != 0 {
		t.Fatalf("exit codes %d, %d; stderr %s %s", first.code, second.code, first.stderr, second.stderr)
	}
	one, err := os.ReadFile("hello.chorus-1.0.0.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	two, _ := os.ReadFile("again.tgz")
	if !bytes.Equal(one, two) {
		t.Error("packing the same skill twice gave different archives")
	}
	sum := sha256.Sum256(one)
	want := fmt.Sprintf("packed hello.chorus 1.0.0 into hello.chorus-1.0.0.tar.gz\nsha256 %x\nsize   %d\n", sum, len(one))
	if first.stdout != want {
		t.Errorf("stdout = %q, want %q", first.stdout, want)
	}
	if !strings.Contains(second.stdout, fmt.Sprintf("sha256 %x", sum)) {
		t.Errorf("second stdout = %q, want the same sha256", second.stdout)
	}
}

func TestSkillPackErrors(t *testing.T) {
	t.Parallel()
	write := func(dir string, files map[string]string) string {
		for name, body := range files {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755)
		}
		return dir
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "no SKILL.md", files: map[string]string{"README": "hi"}, want: "not a skill directory: no SKILL.md in /"},
		{name: "no exec", files: map[string]string{"SKILL.md": "---\nname: x.chorus\n---\n"}, want: "invalid skill x.chorus: "},
		{name: "bad id", files: map[string]string{"SKILL.md": "---\nname: bad two!\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"},
			want: `invalid id "bad two!": want 1 to 64 characters of A-Z a-z 0-9 . _ -, not starting with '.' or '-' (set name: in SKILL.md)`},
		{name: "missing dir", want: "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "skill")
			if tt.files != nil {
				write(dir, tt.files)
			}
			out := filepath.Join(t.TempDir(), "out.tgz")
			r := chorus(context.Background(), nil, "skill", "pack", dir, "-o", out)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit code %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an archive was written for an invalid skill")
			}
		})
	}
}

// TestSkillPublishErrors: `chorus fleet skill publish DIR` checks the
// directory before sending it, and its errors name the directory, the file
// and the rule broken (issue 16 §8). No gateway is needed to see them.
func TestSkillPublishErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		mode  os.FileMode
		want  []string
	}{
		{name: "no SKILL.md", files: map[string]string{"README": "hi"}, mode: 0o755,
			want: []string{"publish ", "not a skill directory: no SKILL.md in /"}},
		{name: "exec not executable", files: map[string]string{"SKILL.md": "---\nname: x.chorus\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"}, mode: 0o644,
			want: []string{"invalid skill x.chorus: exec not executable: run.sh has no execute permission (chmod +x run.sh)"}},
		{name: "invalid id", files: map[string]string{"SKILL.md": "---\nname: bad two!\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"}, mode: 0o755,
			want: []string{`invalid id "bad two!": want 1 to 64 characters`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "myskill")
			os.MkdirAll(dir, 0o755)
			for name, body := range tt.files {
				os.WriteFile(filepath.Join(dir, name), []byte(body), tt.mode)
				os.Chmod(filepath.Join(dir, name), tt.mode)
			}
			r := chorus(context.Background(), nil, "fleet", "skill", "publish", dir, "--server", "http://127.0.0.1:1", "--token", "x")
			want := append([]string{"publish " + dir + ": "}, tt.want...)
			for _, w := range want {
				if r.code == 0 || !strings.Contains(r.stderr, w) {
					t.Errorf("exit code %d, stderr %q; want non-zero and %q", r.code, r.stderr, w)
				}
			}
		})
	}
}
