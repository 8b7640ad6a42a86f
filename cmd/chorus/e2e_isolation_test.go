package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
)

// chorus up works out of the box and says what isolation its skills have:
// as root each example skill runs under a uid of its own ("uid"); as a
// normal user, who cannot switch uids, the skills run as that user, the
// agent says so once at WARN, and the birth reports "none".
func TestUpIsolationE2E(t *testing.T) {
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
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(p.out.String(), "skill isolation  "+tc.want) {
				if time.Now().After(deadline) {
					t.Fatalf("chorus up did not print its isolation:\n%s", p.out.String())
				}
				time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
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
	short := strings.TrimSuffix(skill, ".chorus")
	var out []uint32
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "skill\x00example\x00"+short) {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err != nil || !strings.HasPrefix(cwd, work) {
			continue
		}
		st, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil {
			continue
		}
		out = append(out, st.Sys().(*syscall.Stat_t).Uid)
	}
	return out
}

func allEqual(ids []uint32, want uint32) bool {
	for _, id := range ids {
		if id != want {
			return false
		}
	}
	return true
}

