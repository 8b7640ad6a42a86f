//go:build !chorus_agent

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// chorus up works out of the box and says what isolation its skills have:
// as root each example skill runs under a uid of its own ("uid"); as a
// normal user, who cannot switch uids, the skills run as that user, the
// agent says so once at WARN, and the birth reports "none".
func TestUpIsolationE2E(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t) // to run the normal user's case as another uid
	for _, tc := range []struct {
		name, want string
		user       uint32 // 0: root
	}{
		{name: "root", want: "uid"},
		{name: "normal user", want: "none", user: skillusertest.Range(t).First},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := skillusertest.OpenDir(t)
			cmd := exec.Command(chorusBin, "up", "--data-dir", "data", "--device", "pi-iso",
				"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
			if tc.user != 0 {
				if err := os.Chown(work, int(tc.user), int(tc.user)); err != nil {
					t.Fatal(err)
				}
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.user, Gid: tc.user}}
			}
			p := startProc(t, work, cmd)
			up := waitUp(t, p, filepath.Join(work, "data"))
			obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
			obs.Sub(t, "chorus/v1/pi-iso/#")
			var birth struct{ Isolation string }
			if err := json.Unmarshal(obs.Expect(t, "chorus/v1/pi-iso/birth", 20*time.Second).Payload, &birth); err != nil || birth.Isolation != tc.want {
				t.Errorf("birth isolation %q (%v), want %q", birth.Isolation, err, tc.want)
			}
			waitSkills(t, obs, "pi-iso", func(s map[string]string) bool { return s["hello.chorus"] == "loaded" })
			owners := skillOwners(t, work, "hello.chorus")
			if tc.user != 0 && (len(owners) == 0 || !allEqual(owners, tc.user)) {
				t.Errorf("hello.chorus runs as %v, want the user's uid %d", owners, tc.user)
			}
			if tc.user == 0 && (len(owners) == 0 || owners[0] == 0) {
				t.Errorf("hello.chorus runs as %v, want a uid of its own", owners)
			}
			if err := poll.Wait(context.Background(), "chorus up printing its isolation", 10*time.Second, func() bool {
				return strings.Contains(p.out.String(), "skill isolation  "+tc.want)
			}); err != nil {
				t.Fatalf("%v:\n%s", err, p.out.String())
			}
			if n := strings.Count(p.out.String(), "skills run as the agent's own user"); tc.user != 0 && n != 1 {
				t.Errorf("the warning about no isolation was logged %d times, want once", n)
			}
			if err := p.stop(t, 15*time.Second); err != nil {
				t.Fatalf("exit: %v", err)
			}
		})
	}
}

// skillOwners lists the uids of the processes that run the example skill
// ($CHORUS_BIN skill example <short name>) in a directory below work.
func skillOwners(t *testing.T, work, skill string) []uint32 {
	t.Helper()
	var out []uint32
	for _, pid := range skillPIDs(t, work, skill) {
		out = append(out, procUID(t, pid))
	}
	return out
}

// skillPIDs lists the processes that run the example skill below work.
func skillPIDs(t *testing.T, work, skill string) []int {
	t.Helper()
	short := strings.TrimSuffix(skill, ".chorus")
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "skill\x00example\x00"+short) {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err != nil || !strings.HasPrefix(cwd, work) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func procUID(t *testing.T, pid int) uint32 {
	t.Helper()
	st, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Uid
}

func allEqual(ids []uint32, want uint32) bool {
	for _, id := range ids {
		if id != want {
			return false
		}
	}
	return true
}

// The agent as the shipped systemd unit runs it: a non-root user holding
// only the unit's AmbientCapabilities, with no_new_privs. Those are enough to
// run each skill under a uid of its own, and the skill holds none of them.
func TestAgentAsServiceUserE2E(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	caps := unitCapabilities(t, "../../configs/systemd/chorus-agent.service")
	work := skillusertest.OpenDir(t)
	gw := startChorus(t, work, "gateway", "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, gw, filepath.Join(work, "chorus-data"))
	mustChorus(t, work, "fleet", "device", "add", "pi-svc", "--credentials-out", "pi-svc.json")

	agentUID := skillusertest.Range(t).First // the unit's "chorus" user
	data, skills := filepath.Join(work, "agent-data"), filepath.Join(work, "skills")
	if err := os.Mkdir(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	copyDir(t, "../../configs/skills/hello.chorus", filepath.Join(skills, "hello.chorus"))
	if err := os.Mkdir(data, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{data, filepath.Join(work, "pi-svc.json")} {
		if err := os.Chown(p, int(agentUID), int(agentUID)); err != nil {
			t.Fatal(err)
		}
	}
	startProc(t, work, exec.Command(setpriv, fmt.Sprintf("--reuid=%d", agentUID), fmt.Sprintf("--regid=%d", agentUID),
		"--clear-groups", "--no-new-privs", "--inh-caps="+caps, "--ambient-caps="+caps, "--bounding-set=-all,"+caps,
		chorusBin, "agent", "--credentials", "pi-svc.json", "--data-dir", data, "--skills", skills, "--ws-listen", "off"))

	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-svc/#")
	var birth struct{ Isolation string }
	if err := json.Unmarshal(obs.Expect(t, "chorus/v1/pi-svc/birth", 20*time.Second).Payload, &birth); err != nil || birth.Isolation != "uid" {
		t.Fatalf("birth isolation %q (%v), want uid", birth.Isolation, err)
	}
	waitSkills(t, obs, "pi-svc", func(s map[string]string) bool { return s["hello.chorus"] == "loaded" })
	pids := skillPIDs(t, work, "hello.chorus")
	if len(pids) == 0 {
		t.Fatal("no hello.chorus process")
	}
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
			if !strings.Contains(string(status), line+"\n") {
				t.Errorf("skill %d lacks %q", pid, line)
			}
		}
		if uid := procUID(t, pid); uid == agentUID || uid == 0 {
			t.Errorf("skill %d runs as uid %d, not one of its own", pid, uid)
		}
	}
}

// unitCapabilities reads AmbientCapabilities= of a systemd unit as setpriv
// wants them: "+setuid,+setgid,...".
func unitCapabilities(t *testing.T, unit string) string {
	t.Helper()
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "AmbientCapabilities="); ok {
			var caps []string
			for _, c := range strings.Fields(v) {
				caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
			return strings.Join(caps, ",")
		}
	}
	t.Fatalf("%s has no AmbientCapabilities=", unit)
	return ""
}

// skills.isolation uid refuses to start an agent that cannot switch uids,
// with the fix in the error, rather than run skills as its own user.
func TestIsolationUIDRefusedWithoutCapabilitiesE2E(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t)
	user := skillusertest.Range(t).First
	work := skillusertest.OpenDir(t)
	if err := os.Chown(work, int(user), int(user)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chorusBin, "up", "--data-dir", "data", "--skill-isolation", "uid",
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: user, Gid: user}}
	p := startProc(t, work, cmd)
	select {
	case err := <-p.waited:
		p.waited <- err
		if err == nil {
			t.Fatal("chorus up started skills without isolation")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chorus up kept running with skills.isolation uid and no capabilities")
	}
	if out := p.out.String(); !strings.Contains(out, "skills.isolation is uid but the agent lacks CAP_CHOWN, CAP_KILL, CAP_SETGID, CAP_SETUID") {
		t.Errorf("the error does not say what is missing:\n%s", out)
	}
}
