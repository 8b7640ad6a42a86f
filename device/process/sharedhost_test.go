package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// hostScript plays the shared host's side of the control protocol on fd 3.
const hostScript = `#!/bin/sh
[ "$1" = --host ] || exit 2
while read cmd id rest <&3; do
  case $cmd in
    load) echo "loaded $id $rest" ;;
    unload) echo "unloaded $id" >&3 ;;
  esac
done
`

func sharedConfig(t *testing.T) process.Config {
	t.Helper()
	cfg, _ := testConfig(t)
	bin := filepath.Join(t.TempDir(), "launcher")
	if err := os.WriteFile(bin, []byte(hostScript), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.TailLines = 50
	cfg.OVOS = process.OVOS{Launcher: bin, Root: t.TempDir(), SkillURL: func(s string) string { return "ws://127.0.0.1:8181/core/skill/" + s + "/tok" }}
	return cfg
}

// Two skills share one host; each has its own generated mycroft.conf;
// unloading one leaves the host; the last one stops it.
func TestSharedHostLoadsAndUnloads(t *testing.T) {
	cfg := sharedConfig(t)
	h := process.NewSharedHost(process.NewLauncher(cfg))
	a, err := h.Start(ovosSkill(t, "a.ovos"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Start(ovosSkill(t, "b.ovos"))
	if err != nil {
		t.Fatal(err)
	}
	if a.PID() != b.PID() {
		t.Fatalf("two hosts: %d and %d", a.PID(), b.PID())
	}
	poll.Until(t, "both loads", 10*time.Second, func() bool {
		tail := strings.Join(a.Tail(), "\n")
		return strings.Contains(tail, "loaded a.ovos") && strings.Contains(tail, "loaded b.ovos")
	})
	for _, id := range []string{"a.ovos", "b.ovos"} {
		conf := filepath.Join(cfg.OVOS.Root, process.SharedHostID, "skills", id, "mycroft.conf")
		if b, err := os.ReadFile(conf); err != nil || !strings.Contains(string(b), "/core/skill/"+id+"/tok") {
			t.Errorf("%s: %v %s", conf, err, b)
		}
	}
	if err := a.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.ExitErr() != nil || !alive(b.PID()) {
		t.Fatalf("after unloading a: err %v, host alive %v", a.ExitErr(), alive(b.PID()))
	}
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the host to stop with its last skill", 10*time.Second, func() bool { return !alive(b.PID()) })
}

// A host that dies ends every skill it hosted, with why.
func TestSharedHostExitEndsItsSkills(t *testing.T) {
	h := process.NewSharedHost(process.NewLauncher(sharedConfig(t)))
	a, err := h.Start(ovosSkill(t, "a.ovos"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(a.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hosted skill outlived its host")
	}
	if err := a.ExitErr(); err == nil || !strings.Contains(err.Error(), "shared host exited") {
		t.Errorf("ExitErr = %v", err)
	}
	// The next skill gets a new host.
	b, err := h.Start(ovosSkill(t, "b.ovos"))
	if err != nil {
		t.Fatal(err)
	}
	if b.PID() == a.PID() {
		t.Error("the dead host was reused")
	}
	t.Cleanup(func() { _ = b.Stop(t.Context()) })
}
