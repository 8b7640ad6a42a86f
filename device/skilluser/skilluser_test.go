package skilluser

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    Range
	}{
		{in: DefaultRange, want: Range{70000, 70999}},
		{in: " 2000-2000 ", want: Range{2000, 2000}},
		{in: "70000", err: "FIRST-LAST"},
		{in: "a-b", err: "FIRST-LAST"},
		{in: "9-8000", err: "below 1000"},
		{in: "5000-4000", err: "above last"},
		{in: "65000-66000", err: "nobody"},
		{in: "4294967000-4294967295", err: "-1"},
		{in: "100000-5000000", err: "more than"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRange(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A range that an account or a subordinate range of the host uses is
// refused, naming it.
func TestRangeMustBeFree(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := idFiles{
		Passwd: write("passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n"),
		Group:  write("group", "root:x:0:\nplugdev:x:46:\nmedia:x:3005:\n"),
		SubUID: write("subuid", "alice:100000:65536\n"),
		SubGID: filepath.Join(dir, "missing"),
	}
	for _, tc := range []struct{ r, err string }{
		{"70000-70999", ""},
		{"1000-1999", "alice (id 1000)"},
		{"3000-3999", "media (id 3005)"},
		{"150000-150999", "alice's subordinate ids 100000-165535"},
	} {
		r, err := ParseRange(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		err = r.checkFree(files)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: err = %v, want %q", tc.r, err, tc.err)
		}
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown and the sweep need root (CI runs the tests as root)")
	}
}

// openTemp is a temporary directory every uid can search, with its parents.
func openTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testRange(t *testing.T) Range {
	// The pid makes parallel test binaries use different ranges.
	first := uint32(1_500_000_000 + os.Getpid()%100000*1000)
	return Range{First: first, Last: first + 999}
}

func open(t *testing.T, r Range, dir string) *Accounts {
	t.Helper()
	a, err := Open(Config{Range: r, StateFile: filepath.Join(dir, "uids.json"),
		HomeRoot: filepath.Join(dir, "home"), SettingsRoot: filepath.Join(dir, "settings"), AgentGID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// Each skill gets its own uid, kept across a reopen; its home is its own
// (0700) and its settings directory is its own with the agent's group (0770).
func TestAccountAllocationAndDirs(t *testing.T) {
	requireRoot(t)
	dir, r := openTemp(t), testRange(t)
	a := open(t, r, dir)
	// The installer wrote settings before the first start: agent-owned.
	if err := os.MkdirAll(filepath.Join(dir, "settings", "b.skill"), 0o755); err != nil {
		t.Fatal(err)
	}
	accA, err := a.Account("a.skill")
	if err != nil {
		t.Fatal(err)
	}
	accB, err := a.Account("b.skill")
	if err != nil {
		t.Fatal(err)
	}
	if accA.UID != r.First || accB.UID != r.First+1 || accA.GID != accA.UID {
		t.Fatalf("accounts %+v %+v, want uids %d and %d", accA, accB, r.First, r.First+1)
	}
	wantDir(t, accA.Home, accA.UID, accA.UID, 0o700)
	wantDir(t, filepath.Join(dir, "settings", "b.skill"), accB.UID, 4242, 0o770)
	wantDir(t, filepath.Join(dir, "home"), 0, 0, 0o711)
	if _, err := a.Account("../x"); err == nil {
		t.Error("an invalid skill id got an account")
	}
	_ = a.Close()

	again := open(t, r, dir)
	if acc, err := again.Account("b.skill"); err != nil || acc.UID != accB.UID {
		t.Fatalf("after reopen b.skill = %+v, %v; want uid %d", acc, err, accB.UID)
	}
}

func wantDir(t *testing.T, path string, uid, gid uint32, perm os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || sys.Uid != uid || sys.Gid != gid || st.Mode().Perm() != perm {
		t.Errorf("%s: dir %v owner %d:%d mode %04o, want dir %d:%d %04o", path, st.IsDir(), sys.Uid, sys.Gid, st.Mode().Perm(), uid, gid, perm)
	}
}

// Two agents on one host never share a range; the first one's Close frees it.
func TestRangeClaimedOnce(t *testing.T) {
	requireRoot(t)
	r := testRange(t)
	a := open(t, r, openTemp(t))
	_, err := Open(Config{Range: r, StateFile: filepath.Join(t.TempDir(), "u"), HomeRoot: filepath.Join(openTemp(t), "h"), SettingsRoot: filepath.Join(openTemp(t), "s")})
	if err == nil || !strings.Contains(err.Error(), "in use by another chorus agent") {
		t.Fatalf("second Open: %v, want the range refused", err)
	}
	_ = a.Close()
	open(t, r, openTemp(t))
}

// A root a skill uid cannot reach is refused with the directory to fix.
func TestUnreachableRootRefused(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir() // 0700
	_, err := Open(Config{Range: testRange(t), StateFile: filepath.Join(dir, "u"), HomeRoot: filepath.Join(dir, "home"), SettingsRoot: filepath.Join(dir, "settings")})
	if err == nil || !strings.Contains(err.Error(), "chmod o+x") {
		t.Fatalf("Open = %v, want an error naming the fix", err)
	}
}

// Sweep kills every process running under a uid of the range, and nothing else.
func TestSweep(t *testing.T) {
	requireRoot(t)
	r := testRange(t)
	orphan := exec.Command("sleep", "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.First + 5, Gid: r.First + 5}}
	bystander := exec.Command("sleep", "300")
	for _, c := range []*exec.Cmd{orphan, bystander} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill() })
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	n, err := sweep("/proc", r)
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the orphan under a range uid is still running")
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a process outside the range was hit: %v", err)
	}
}

func TestParseCaps(t *testing.T) {
	status := "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t00000000000000c1\nCapEff:\t00000000000000c1\nCapBnd:\t000001ffffffffff\nCapAmb:\t00000000000000c1\n"
	c, err := parseCaps([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Any() || len(c.Missing()) != 1 || c.Missing()[0] != "CAP_KILL" {
		t.Fatalf("caps %+v: any %v missing %v, want only CAP_KILL missing", c, c.Any(), c.Missing())
	}
	if _, err := parseCaps([]byte("Name:\tx\n")); err == nil {
		t.Error("a status without capability lines parsed")
	}
}
