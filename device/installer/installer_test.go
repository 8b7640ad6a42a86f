package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/desired"
)

func TestInstall(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello.chorus", "1.0.0")
	e.srv.add(a)
	if err := e.apply(1, map[string]desired.Skill{"hello.chorus": a.skill("1.0.0")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	msgs := e.bus.take()
	if len(msgs) != 1 || msgs[0].Type != TypeInstallComplete {
		t.Fatalf("events %v, want one %s", types(msgs), TypeInstallComplete)
	}
	want := map[string]any{"skill_id": "hello.chorus", "version": "1.0.0"}
	if !reflect.DeepEqual(msgs[0].Data, want) {
		t.Errorf("install.complete data %v, want %v", msgs[0].Data, want)
	}
	// The skill manager's discovery finds it, loadable, in the installed root.
	cat, err := discovery.Discover(discovery.Config{Installed: filepath.Join(e.data, "installed")})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cat.Get("hello.chorus")
	if !ok || !s.Valid || s.Root != discovery.RootInstalled || s.Version != "1.0.0" {
		t.Fatalf("discovered %+v (found %v)", s, ok)
	}
	if fi, err := os.Stat(filepath.Join(e.installed("hello.chorus"), "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v %v", fi, err)
	}
	reqs := e.srv.requests()
	if len(reqs) != 1 || !reqs[0].authOK || reqs[0].path != desired.ArtifactURL(a.sha) {
		t.Errorf("requests %+v, want one authenticated GET of the artifact", reqs)
	}
	if got := e.in.Managed(); !reflect.DeepEqual(got, []string{"hello.chorus"}) {
		t.Errorf("Managed %v", got)
	}
	if v, ok := e.in.Applied(); !ok || v != 1 {
		t.Errorf("Applied %d %v", v, ok)
	}
	if want := []appliedCall{{1, []string{"hello.chorus"}}}; !reflect.DeepEqual(e.applied, want) {
		t.Errorf("OnApplied calls %+v, want %+v", e.applied, want)
	}
	if s := e.staged(); len(s) != 0 {
		t.Errorf("staging not empty: %v", s)
	}
}

func TestApplyIdempotent(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	doc := map[string]desired.Skill{"hello": a.skill("1.0.0")}
	doc["hello"] = withSettings(doc["hello"], map[string]any{"units": "metric"})
	if err := e.apply(4, doc); err != nil {
		t.Fatal(err)
	}
	e.bus.take()
	before := len(e.srv.requests())
	stateBefore := readFile(t, filepath.Join(e.data, "installed", StateFile))

	if err := e.apply(4, doc); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if msgs := e.bus.take(); len(msgs) != 0 {
		t.Errorf("second Apply emitted %v", types(msgs))
	}
	if n := len(e.srv.requests()); n != before {
		t.Errorf("second Apply made %d requests", n-before)
	}
	if s := readFile(t, filepath.Join(e.data, "installed", StateFile)); s != stateBefore {
		t.Errorf("second Apply rewrote the state:\n%s\n%s", stateBefore, s)
	}
	// A restarted installer over the same data dir agrees.
	e.in = e.start()
	if err := e.apply(4, doc); err != nil {
		t.Fatal(err)
	}
	if msgs := e.bus.take(); len(msgs) != 0 {
		t.Errorf("Apply after restart emitted %v", types(msgs))
	}
}

func withSettings(s desired.Skill, settings map[string]any) desired.Skill {
	s.Settings = settings
	return s
}

func TestUpgrade(t *testing.T) {
	e := newEnv(t)
	v1, v2 := packSkill(t, "hello", "1.0.0"), packSkill(t, "hello", "2.0.0")
	e.srv.add(v1)
	e.srv.add(v2)
	if err := e.apply(1, map[string]desired.Skill{"hello": v1.skill("1.0.0")}); err != nil {
		t.Fatal(err)
	}
	e.bus.take()
	if err := e.apply(2, map[string]desired.Skill{"hello": v2.skill("2.0.0")}); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	msgs := e.bus.take()
	if len(msgs) != 1 || msgs[0].Type != TypeInstallComplete || msgs[0].Data["version"] != "2.0.0" {
		t.Fatalf("events %v", msgs)
	}
	if got := readFile(t, filepath.Join(e.installed("hello"), "run.sh")); !strings.Contains(got, "2.0.0") {
		t.Errorf("run.sh after upgrade: %q", got)
	}
	if s := e.staged(); len(s) != 0 {
		t.Errorf("staging not empty after upgrade: %v", s)
	}
	if v, _ := e.in.Applied(); v != 2 {
		t.Errorf("Applied %d, want 2", v)
	}
}

func TestUninstall(t *testing.T) {
	e := newEnv(t)
	a, b := packSkill(t, "hello", "1.0.0"), packSkill(t, "other", "1.0.0")
	e.srv.add(a)
	e.srv.add(b)
	// A skill someone put in the installed root by hand: not managed.
	mine := skillSrc(t, "mine", "0.1")
	if err := os.CopyFS(e.installed("mine"), os.DirFS(mine)); err != nil {
		t.Fatal(err)
	}
	if err := e.apply(1, map[string]desired.Skill{"hello": a.skill("1.0.0"), "other": b.skill("1.0.0")}); err != nil {
		t.Fatal(err)
	}
	e.bus.take()
	if err := e.apply(2, map[string]desired.Skill{"other": b.skill("1.0.0")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if msgs := e.bus.take(); len(msgs) != 1 || msgs[0].Type != TypeUninstallComplete || len(msgs[0].Data) != 0 {
		t.Fatalf("events %v, want one %s {}", msgs, TypeUninstallComplete)
	}
	if exists(e.installed("hello")) {
		t.Error("hello still installed")
	}
	if !exists(e.installed("other")) || !exists(filepath.Join(e.installed("mine"), "SKILL.md")) {
		t.Error("a skill that is still desired, or not managed, was removed")
	}
	if got := e.applied[len(e.applied)-1]; got.version != 2 || !reflect.DeepEqual(got.managed, []string{"other"}) {
		t.Errorf("OnApplied %+v", got)
	}
	// Removing everything desired leaves the unmanaged skill alone.
	if err := e.apply(3, nil); err != nil {
		t.Fatal(err)
	}
	if exists(e.installed("other")) || !exists(e.installed("mine")) {
		t.Error("empty document: wrong skills removed")
	}
	if got := e.in.Managed(); len(got) != 0 {
		t.Errorf("Managed %v", got)
	}
}

func TestRefusesUnmanagedSkill(t *testing.T) {
	for _, dirName := range []string{"mine", "MINE"} {
		t.Run(dirName, func(t *testing.T) {
			e := newEnv(t)
			src := skillSrc(t, "mine", "0.1")
			if err := os.CopyFS(e.installed(dirName), os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			a := packSkill(t, "mine", "9.0")
			e.srv.add(a)
			err := e.apply(1, map[string]desired.Skill{"mine": a.skill("9.0")})
			if !errors.Is(err, ErrNotManaged) {
				t.Fatalf("Apply: got %v, want ErrNotManaged", err)
			}
			msgs := e.bus.take()
			if len(msgs) != 1 || msgs[0].Type != TypeInstallFailed {
				t.Fatalf("events %v", types(msgs))
			}
			if got := readFile(t, filepath.Join(e.installed(dirName), "run.sh")); !strings.Contains(got, "0.1") {
				t.Errorf("unmanaged skill changed: %q", got)
			}
			if len(e.applied) != 0 {
				t.Errorf("OnApplied called after a failure: %+v", e.applied)
			}
		})
	}
}

// failure runs one Apply that must fail for skill id and checks the
// failed event, that nothing got installed and that staging holds no
// unpacked tree.
func failure(t *testing.T, e *env, id string, s desired.Skill, detail string) {
	t.Helper()
	err := e.apply(1, map[string]desired.Skill{id: s})
	if err == nil {
		t.Fatal("Apply: no error")
	}
	msgs := e.bus.take()
	if len(msgs) != 1 || msgs[0].Type != TypeInstallFailed {
		t.Fatalf("events %v, want one %s", types(msgs), TypeInstallFailed)
	}
	d := msgs[0].Data
	if d["error"] != ErrorInstall || d["skill_id"] != id || !strings.Contains(fmt.Sprint(d["detail"]), detail) {
		t.Errorf("failed data %v, want error %q and detail containing %q", d, ErrorInstall, detail)
	}
	if exists(e.installed(id)) {
		t.Error("skill installed despite the failure")
	}
	for _, name := range e.staged() {
		if !strings.HasSuffix(name, partSuffix) {
			t.Errorf("staging leftover %s", name)
		}
	}
	if len(e.applied) != 0 {
		t.Errorf("OnApplied called after a failure: %+v", e.applied)
	}
}

func TestTamperedArtifact(t *testing.T) {
	e := newEnv(t)
	good, evil := packSkill(t, "hello", "1.0.0"), packSkill(t, "hello", "6.6.6")
	// The gateway serves other bytes of the very same size under the
	// desired sha256.
	tampered := append([]byte(nil), good.data...)
	tampered[len(tampered)/2] ^= 0xff
	e.srv.put(good.sha, tampered)
	failure(t, e, "hello", good.skill("1.0.0"), "sha256")
	if s := e.staged(); len(s) != 0 {
		t.Errorf("tampered download kept: %v", s)
	}
	// A different archive under the desired sha: size mismatch.
	e.srv.put(good.sha, evil.data)
	failure(t, e, "hello", good.skill("1.0.0"), "artifact integrity")
}

func TestResumeAfterDrop(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	half := len(a.data) / 2
	e.srv.dropNext(a.sha, half, 1)
	if err := e.apply(1, map[string]desired.Skill{"hello": a.skill("1.0.0")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	reqs := e.srv.requests()
	if len(reqs) != 2 || reqs[0].rng != "" || reqs[1].rng != fmt.Sprintf("bytes=%d-", half) {
		t.Fatalf("requests %+v, want a full GET then Range bytes=%d-", reqs, half)
	}
	if msgs := e.bus.take(); len(msgs) != 1 || msgs[0].Type != TypeInstallComplete {
		t.Fatalf("events %v", types(msgs))
	}
}

// An agent killed mid-download restarts, cleans staging (keeping the
// partial download) and resumes where it stopped.
func TestResumeAfterRestart(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	third := len(a.data) / 3
	writeFile(t, filepath.Join(e.data, "staging", a.sha+partSuffix), string(a.data[:third]), 0o600)
	writeFile(t, filepath.Join(e.data, "staging", "unpack-hello-123", "hello", "SKILL.md"), "half", 0o644)
	e.in = e.start()
	if err := e.in.CleanStaging(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.apply(1, map[string]desired.Skill{"hello": a.skill("1.0.0")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	reqs := e.srv.requests()
	if len(reqs) != 1 || reqs[0].rng != fmt.Sprintf("bytes=%d-", third) {
		t.Fatalf("requests %+v, want one Range bytes=%d-", reqs, third)
	}
	if !exists(filepath.Join(e.installed("hello"), "run.sh")) {
		t.Fatal("not installed")
	}
}

// A link that keeps dropping fails the pass (every attempt cut short) but
// keeps the partial download; the next pass resumes it.
func TestTruncatedDownloadKeepsPartial(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	half := len(a.data) / 2
	e.srv.dropNext(a.sha, half, maxAttempts)
	failure(t, e, "hello", a.skill("1.0.0"), "unexpected EOF")
	part := filepath.Join(e.data, "staging", a.sha+partSuffix)
	if fi, err := os.Stat(part); err != nil || fi.Size() != int64(half) {
		t.Fatalf("partial download: %v %v, want %d bytes", fi, err, half)
	}
	if err := e.apply(1, map[string]desired.Skill{"hello": a.skill("1.0.0")}); err != nil {
		t.Fatalf("next pass: %v", err)
	}
	reqs := e.srv.requests()
	if last := reqs[len(reqs)-1]; last.rng != fmt.Sprintf("bytes=%d-", half) {
		t.Fatalf("last request %+v, want Range bytes=%d-", last, half)
	}
	if types := types(e.bus.take()); !reflect.DeepEqual(types, []string{TypeInstallComplete}) {
		t.Fatalf("events %v", types)
	}
}

func TestOversized(t *testing.T) {
	t.Run("desired size over the download cap", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.MaxDownload = 100 })
		a := packSkill(t, "hello", "1.0.0")
		e.srv.add(a)
		failure(t, e, "hello", a.skill("1.0.0"), "over the 100-byte limit")
		if n := len(e.srv.requests()); n != 0 {
			t.Errorf("%d requests for an oversized artifact", n)
		}
	})
	t.Run("server sends more than the desired size", func(t *testing.T) {
		e := newEnv(t)
		a := packSkill(t, "hello", "1.0.0")
		e.srv.add(a)
		s := a.skill("1.0.0")
		s.Size -= 10
		failure(t, e, "hello", s, "artifact integrity")
		if st := e.staged(); len(st) != 0 {
			t.Errorf("partial kept: %v", st)
		}
	})
	t.Run("archive over the unpack limits", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.Limits.MaxFileBytes = 10 })
		a := packSkill(t, "hello", "1.0.0")
		e.srv.add(a)
		failure(t, e, "hello", a.skill("1.0.0"), "over 10")
	})
}

func TestBadArchives(t *testing.T) {
	skillMD := "---\nname: hello\nexec: run.sh\n---\nHi.\n"
	tests := []struct {
		name   string
		art    func(t *testing.T) art
		detail string
	}{
		{"traversal", func(t *testing.T) art {
			return rawArt(tarGz(t, map[string]string{"SKILL.md": skillMD, "run.sh": "#!/bin/sh\n", "../../evil": "x"}))
		}, "unsafe archive entry"},
		{"not an archive", func(t *testing.T) art { return rawArt([]byte("just text")) }, "gzip"},
		{"no exec", func(t *testing.T) art {
			return rawArt(tarGz(t, map[string]string{"SKILL.md": "---\nname: hello\n---\nHi.\n"}))
		}, "no exec"},
		{"no SKILL.md", func(t *testing.T) art {
			return rawArt(tarGz(t, map[string]string{"run.sh": "#!/bin/sh\n"}))
		}, "holds 0 skills"},
		{"another skill's name", func(t *testing.T) art { return packSkill(t, "impostor", "1.0.0") }, `"impostor"`},
		{"invalid declared id", func(t *testing.T) art {
			return rawArt(tarGz(t, map[string]string{"SKILL.md": "---\nname: ../x\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"}))
		}, "want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			a := tt.art(t)
			e.srv.add(a)
			failure(t, e, "hello", a.skill("1.0.0"), tt.detail)
			if exists(filepath.Join(e.data, "evil")) || exists(filepath.Join(e.data, "staging", "evil")) {
				t.Fatal("traversal wrote outside the staging tree")
			}
			if s := e.staged(); len(s) != 0 {
				t.Errorf("staging leftovers: %v", s)
			}
		})
	}
}

func TestHTTPFailures(t *testing.T) {
	a := packSkill(t, "hello", "1.0.0")
	tests := []struct {
		name   string
		tweak  func(*Config)
		skill  func(s desired.Skill) desired.Skill
		code   string
		detail string
	}{
		{"wrong password", func(c *Config) { c.Password = "nope" }, nil, ErrorInstall, "401"},
		{"unknown artifact", nil, func(s desired.Skill) desired.Skill {
			s.SHA256 = strings.Repeat("a", 64)
			s.URL = desired.ArtifactURL(s.SHA256)
			return s
		}, ErrorInstall, "404"},
		{"relative url without a gateway url", func(c *Config) { c.ServerURL = "" }, nil, ErrorURL, "no gateway url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tweaks []func(*Config)
			if tt.tweak != nil {
				tweaks = append(tweaks, tt.tweak)
			}
			e := newEnv(t, tweaks...)
			e.srv.add(a)
			s := a.skill("1.0.0")
			if tt.skill != nil {
				s = tt.skill(s)
			}
			if err := e.apply(1, map[string]desired.Skill{"hello": s}); err == nil {
				t.Fatal("no error")
			}
			msgs := e.bus.take()
			if len(msgs) != 1 || msgs[0].Data["error"] != tt.code || !strings.Contains(fmt.Sprint(msgs[0].Data["detail"]), tt.detail) {
				t.Fatalf("events %+v, want error %q with %q", msgs, tt.code, tt.detail)
			}
		})
	}
}

// Credentials go to the gateway only, never to a mirror on another host.
func TestNoCredentialsToMirror(t *testing.T) {
	e := newEnv(t)
	mirror := newServer(t)
	a := packSkill(t, "hello", "1.0.0")
	mirror.add(a)
	s := a.skill("1.0.0")
	s.URL = mirror.URL + desired.ArtifactURL(a.sha)
	err := e.apply(1, map[string]desired.Skill{"hello": s})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Apply: %v, want the mirror's 401 (no credentials sent)", err)
	}
	if r := mirror.requests(); len(r) != 1 || r[0].authOK {
		t.Fatalf("mirror saw %+v", r)
	}
}

func TestCleanStaging(t *testing.T) {
	e := newEnv(t)
	staging := filepath.Join(e.data, "staging")
	part := strings.Repeat("b", 64) + partSuffix
	writeFile(t, filepath.Join(staging, part), "partial", 0o600)
	writeFile(t, filepath.Join(staging, "unpack-hello-42", "hello", "SKILL.md"), "x", 0o644)
	writeFile(t, filepath.Join(staging, "old-hello-7", "hello", "run.sh"), "x", 0o755)
	writeFile(t, filepath.Join(staging, "junk"), "x", 0o644)
	writeFile(t, filepath.Join(staging, "nothex.part"), "x", 0o644)
	if err := e.in.CleanStaging(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.staged(); !reflect.DeepEqual(got, []string{part}) {
		t.Fatalf("staging after clean: %v, want only the partial download", got)
	}
	// A pass whose document does not name that artifact collects it.
	if err := e.apply(1, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.staged(); len(got) != 0 {
		t.Fatalf("staging after Apply: %v", got)
	}
}

func TestSettings(t *testing.T) {
	e := newEnv(t)
	a := packSkill(t, "hello", "1.0.0")
	e.srv.add(a)
	path := filepath.Join(e.data, "settings", "hello", "settings.json")
	s := withSettings(a.skill("1.0.0"), map[string]any{"units": "metric", "n": 3})
	if err := e.apply(1, map[string]desired.Skill{"hello": s}); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), "{\n  \"n\": 3,\n  \"units\": \"metric\"\n}\n"; got != want {
		t.Fatalf("settings.json %q, want %q", got, want)
	}
	e.bus.take()
	reqs := len(e.srv.requests())

	// A settings-only change rewrites the file, with no reinstall.
	s.Settings = map[string]any{"units": "imperial"}
	if err := e.apply(2, map[string]desired.Skill{"hello": s}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, "imperial") {
		t.Fatalf("settings.json %q after change", got)
	}
	if msgs := e.bus.take(); len(msgs) != 0 {
		t.Errorf("settings-only change emitted %v", types(msgs))
	}
	if n := len(e.srv.requests()); n != reqs {
		t.Errorf("settings-only change downloaded")
	}
	if v, _ := e.in.Applied(); v != 2 {
		t.Errorf("Applied %d, want 2", v)
	}

	// Settings dropped from the document: the file stays as it is.
	s.Settings = nil
	if err := e.apply(3, map[string]desired.Skill{"hello": s}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, "imperial") {
		t.Fatalf("settings.json %q after settings were dropped", got)
	}
	// Uninstall keeps settings, as OVOS does.
	if err := e.apply(4, nil); err != nil {
		t.Fatal(err)
	}
	if !exists(path) {
		t.Error("uninstall removed settings.json")
	}
}

func TestPartialFailureKeepsGoing(t *testing.T) {
	e := newEnv(t)
	good := packSkill(t, "good", "1.0.0")
	e.srv.add(good)
	bad := packSkill(t, "bad", "1.0.0")
	e.srv.put(bad.sha, good.data)
	err := e.apply(7, map[string]desired.Skill{"bad": bad.skill("1.0.0"), "good": good.skill("1.0.0")})
	if !errors.Is(err, ErrIntegrity) {
		t.Fatalf("Apply: %v", err)
	}
	if got := types(e.bus.take()); !reflect.DeepEqual(got, []string{TypeInstallFailed, TypeInstallComplete}) {
		t.Fatalf("events %v", got)
	}
	if !exists(e.installed("good")) {
		t.Error("good skill not installed")
	}
	if _, ok := e.in.Applied(); ok || len(e.applied) != 0 {
		t.Error("a failed pass was reported as applied")
	}
}

func TestNewRequires(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no device", Config{InstalledRoot: t.TempDir(), Bus: &recorder{}}},
		{"bad device", Config{Device: "../x", InstalledRoot: t.TempDir(), Bus: &recorder{}}},
		{"no installed root", Config{Device: "d", Bus: &recorder{}}},
		{"no bus", Config{Device: "d", InstalledRoot: t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Fatal("no error")
			}
		})
	}
	t.Run("corrupt state file", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, StateFile), "{", 0o644)
		if _, err := New(Config{Device: "d", InstalledRoot: root, Bus: &recorder{}}); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestApplyRefusesInvalidDoc(t *testing.T) {
	e := newEnv(t)
	err := e.in.Apply(context.Background(), desired.Doc{Version: 1, Skills: map[string]desired.Skill{"x": {}}})
	if !errors.Is(err, desired.ErrInvalid) {
		t.Fatalf("Apply: %v", err)
	}
	if msgs := e.bus.take(); len(msgs) != 0 {
		t.Fatalf("events %v", msgs)
	}
}

var _ Emitter = (*recorder)(nil)
