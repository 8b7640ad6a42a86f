package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// problemKinds lists "kind:id" for each problem.
func problemKinds(c *Catalog) []string {
	out := []string{}
	for _, p := range c.Problems() {
		out = append(out, string(p.Kind)+":"+p.ID)
	}
	return out
}

func TestDiscoverOrderAndRoots(t *testing.T) {
	base := t.TempDir()
	b1, b2, inst, u1 := filepath.Join(base, "b1"), filepath.Join(base, "b2"), filepath.Join(base, "installed"), filepath.Join(base, "u1")
	mkSkill(t, b1, "zeta", okDoc(""))
	mkSkill(t, b1, "alpha", okDoc(""))
	mkSkill(t, b2, "beta", okDoc(""))
	mkSkill(t, inst, "gamma", okDoc(""))
	mkSkill(t, u1, "delta", okDoc(""))
	mkSkill(t, u1, ".staging", okDoc(""))                          // dot-names are skipped
	write(t, filepath.Join(u1, "notes.txt"), "not a skill", 0o644) // files are skipped
	write(t, filepath.Join(u1, "empty", "README"), "x", 0o644)     // no SKILL.md: not a skill

	c := discover(t, Config{Bundled: []string{b1, b2}, Installed: inst, User: []string{u1}})
	if got, want := ids(c.Entries()), []string{"alpha", "zeta", "beta", "gamma", "delta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	kinds := []RootKind{}
	for _, s := range c.Entries() {
		kinds = append(kinds, s.Root)
	}
	if want := []RootKind{RootBundled, RootBundled, RootBundled, RootInstalled, RootUser}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("root kinds = %v, want %v", kinds, want)
	}
	if len(c.Problems()) != 0 {
		t.Errorf("problems = %v", c.Problems())
	}
	s, ok := c.Get("gamma")
	if !ok || s.Dir != filepath.Join(inst, "gamma") || s.RootDir != inst {
		t.Errorf("Get(gamma) = %+v, %v", s, ok)
	}
	if _, ok := c.Get("GAMMA"); ok {
		t.Error("Get is exact, yet found GAMMA")
	}
}

func TestDiscoverMissingRoots(t *testing.T) {
	base := t.TempDir()
	tests := []struct {
		name     string
		cfg      Config
		problems []string
	}{
		{"zero config", Config{}, []string{}},
		{"missing installed is silent", Config{Installed: filepath.Join(base, "nope")}, []string{}},
		{"missing bundled and user are reported", Config{Bundled: []string{filepath.Join(base, "b")}, User: []string{filepath.Join(base, "u")}},
			[]string{"missing-root:", "missing-root:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := discover(t, tt.cfg)
			if len(c.Entries()) != 0 || !reflect.DeepEqual(problemKinds(c), tt.problems) {
				t.Errorf("entries %v, problems %v; want none, %v", ids(c.Entries()), problemKinds(c), tt.problems)
			}
		})
	}
}

func TestDiscoverCannotTell(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	write(t, file, "x", 0o644)
	t.Run("root is a regular file", func(t *testing.T) {
		for _, cfg := range []Config{{Bundled: []string{file}}, {Installed: file}, {User: []string{file}}} {
			if _, err := Discover(cfg); err == nil || !strings.Contains(err.Error(), "is not a directory") {
				t.Errorf("Discover(%+v) err = %v, want not a directory", cfg, err)
			}
			if _, err := Declared(cfg); err == nil {
				t.Errorf("Declared(%+v) err = nil, want cannot tell", cfg)
			}
		}
	})
	t.Run("root permission denied", func(t *testing.T) {
		locked := filepath.Join(base, "locked")
		mkSkill(t, locked, "a", okDoc(""))
		chmod(t, locked, 0o000)
		if _, err := os.ReadDir(locked); err == nil {
			t.Skip("running as root: chmod 000 does not block reads (covered by the regular-file case)")
		}
		if _, err := Discover(Config{Installed: locked}); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Discover err = %v, want permission denied", err)
		}
		if _, err := Declared(Config{Installed: locked}); err == nil {
			t.Error("Declared err = nil, want cannot tell")
		}
	})
}

// chmod sets mode and restores 0755 at cleanup so t.TempDir can be removed.
func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o755) })
}

func TestDiscoverShadowing(t *testing.T) {
	tests := []struct {
		name     string
		earlier  [2]string // dir, declared name ("" for none) in the earlier root
		later    [2]string // same, in the later root
		earlierR string    // "bundled", "installed" or "user"
		laterR   string
	}{
		{"case variant dir", [2]string{"Hello.Skill", ""}, [2]string{"hello.skill", ""}, "bundled", "user"},
		{"fullwidth dir", [2]string{"hello.skill", ""}, [2]string{"ｈｅｌｌｏ.ｓｋｉｌｌ", "x.y"}, "bundled", "installed"},
		{"declared name vs dir", [2]string{"hello", ""}, [2]string{"other", "HELLO"}, "installed", "user"},
		{"dir vs declared name", [2]string{"x", "greet"}, [2]string{"Greet", "greet2"}, "bundled", "user"},
		{"whitespace variant dir", [2]string{"hello", ""}, [2]string{" hello ", "h2"}, "bundled", "user"},
		{"earlier invalid still holds", [2]string{"broken", "!bad"}, [2]string{"BROKEN", ""}, "bundled", "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			roots := map[string]string{"bundled": filepath.Join(base, "b"), "installed": filepath.Join(base, "i"), "user": filepath.Join(base, "u")}
			mkSkill(t, roots[tt.earlierR], tt.earlier[0], okDoc(tt.earlier[1]))
			laterDir := mkSkill(t, roots[tt.laterR], tt.later[0], okDoc(tt.later[1]))
			c := discover(t, Config{Bundled: []string{roots["bundled"]}, Installed: roots["installed"], User: []string{roots["user"]}})
			entries := c.Entries()
			if len(entries) != 1 || entries[0].Root != RootKind(tt.earlierR) {
				t.Fatalf("entries = %v, want only the %s skill", ids(entries), tt.earlierR)
			}
			var shadowed []Problem
			for _, p := range c.Problems() {
				if p.Kind == ProblemShadowed {
					shadowed = append(shadowed, p)
				}
			}
			if len(shadowed) != 1 || shadowed[0].Path != laterDir {
				t.Fatalf("problems = %v, want %s shadowed", c.Problems(), laterDir)
			}
		})
	}
}

func TestDiscoverLaterUserRootShadowed(t *testing.T) {
	base := t.TempDir()
	u1, u2 := filepath.Join(base, "u1"), filepath.Join(base, "u2")
	mkSkill(t, u1, "a", okDoc(""))
	mkSkill(t, u2, "A", okDoc(""))
	mkSkill(t, u2, "b", okDoc(""))
	c := discover(t, Config{User: []string{u1, u2}})
	if got := ids(c.Loadable()); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("loadable = %v", got)
	}
	if got := problemKinds(c); !reflect.DeepEqual(got, []string{"shadowed:A"}) {
		t.Errorf("problems = %v", got)
	}
}

func TestDiscoverDuplicates(t *testing.T) {
	tests := []struct {
		name    string
		layout  func(t *testing.T, base string) Config
		invalid []string // ids of entries that must be invalid as duplicates
		valid   []string
		probs   []string
	}{
		{"bundled, one root, case variants", func(t *testing.T, base string) Config {
			b := filepath.Join(base, "b")
			mkSkill(t, b, "Hello", okDoc(""))
			mkSkill(t, b, "hello", okDoc(""))
			mkSkill(t, b, "other", okDoc(""))
			mkSkill(t, filepath.Join(base, "u"), "HELLO", okDoc("")) // still shadowed
			return Config{Bundled: []string{b}, User: []string{filepath.Join(base, "u")}}
		}, []string{"Hello", "hello"}, []string{"other"}, []string{"duplicate:hello", "shadowed:HELLO"}},
		{"bundled, two roots, declared names", func(t *testing.T, base string) Config {
			b1, b2 := filepath.Join(base, "b1"), filepath.Join(base, "b2")
			mkSkill(t, b1, "one", okDoc("dup.skill"))
			mkSkill(t, b2, "two", okDoc("DUP.skill"))
			return Config{Bundled: []string{b1, b2}}
		}, []string{"dup.skill", "DUP.skill"}, nil, []string{"duplicate:DUP.skill"}},
		{"installed, same root", func(t *testing.T, base string) Config {
			i := filepath.Join(base, "i")
			mkSkill(t, i, "a", okDoc("x"))
			mkSkill(t, i, "b", okDoc("X"))
			return Config{Installed: i}
		}, []string{"x", "X"}, nil, []string{"duplicate:X"}},
		{"three in one tier", func(t *testing.T, base string) Config {
			b := filepath.Join(base, "b")
			mkSkill(t, b, "a1", okDoc("x"))
			mkSkill(t, b, "a2", okDoc("x"))
			mkSkill(t, b, "a3", okDoc("x"))
			return Config{Bundled: []string{b}}
		}, []string{"x", "x", "x"}, nil, []string{"duplicate:x", "duplicate:x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := discover(t, tt.layout(t, t.TempDir()))
			var bad, good []string
			for _, s := range c.Entries() {
				if s.Valid {
					good = append(good, s.ID)
				} else if strings.HasPrefix(s.Invalid, "duplicate identity") {
					bad = append(bad, s.ID)
				} else {
					t.Errorf("%s invalid for another reason: %s", s.ID, s.Invalid)
				}
			}
			if !reflect.DeepEqual(bad, tt.invalid) || !reflect.DeepEqual(good, tt.valid) {
				t.Errorf("duplicates %v valid %v, want %v and %v", bad, good, tt.invalid, tt.valid)
			}
			if got := problemKinds(c); !reflect.DeepEqual(got, tt.probs) {
				t.Errorf("problems = %v, want %v", got, tt.probs)
			}
		})
	}
}

func TestDiscoverCollections(t *testing.T) {
	base := t.TempDir()
	b := filepath.Join(base, "b")
	mkSkill(t, b, "aaa", okDoc(""))
	write(t, filepath.Join(b, "coll", "COLLECTION.json"), `{"id": "mycoll", "prompt_line": "x"}`, 0o644)
	mkSkill(t, filepath.Join(b, "coll"), "m2", okDoc(""))
	mkSkill(t, filepath.Join(b, "coll"), "m1", okDoc(""))
	write(t, filepath.Join(b, "coll", "m1", "COLLECTION.json"), `{}`, 0o644) // one level only: ignored
	mkSkill(t, filepath.Join(b, "coll", "m1"), "deep", okDoc(""))            // not scanned
	write(t, filepath.Join(b, "coll", "SKILL.md"), okDoc("coll"), 0o644)     // ignored, reported
	write(t, filepath.Join(b, "broken", "COLLECTION.json"), `{"id": `, 0o644)
	mkSkill(t, filepath.Join(b, "broken"), "m3", okDoc(""))
	mkSkill(t, b, "zzz", okDoc(""))

	c := discover(t, Config{Bundled: []string{b}})
	if got, want := ids(c.Loadable()), []string{"aaa", "m3", "m1", "m2", "zzz"}; !reflect.DeepEqual(got, want) {
		t.Errorf("loadable = %v, want %v", got, want)
	}
	for id, want := range map[string]string{"aaa": "", "m1": "mycoll", "m2": "mycoll", "m3": "broken", "zzz": ""} {
		if s, _ := c.Get(id); s.Collection != want {
			t.Errorf("%s.Collection = %q, want %q", id, s.Collection, want)
		}
	}
	if got, want := problemKinds(c), []string{"collection:broken", "collection:mycoll"}; !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %v, want %v", got, want)
	}
	if m := c.Manifest(); m.Entries[2].Dir != "coll/m1" {
		t.Errorf("manifest dir = %q, want coll/m1", m.Entries[2].Dir)
	}
}

func TestDiscoverUnreadableSubdir(t *testing.T) {
	base := t.TempDir()
	b, u := filepath.Join(base, "b"), filepath.Join(base, "u")
	locked := mkSkill(t, b, "locked", okDoc(""))
	mkSkill(t, b, "open", okDoc(""))
	mkSkill(t, u, "Locked", okDoc(""))
	symlink(t, filepath.Join(base, "nowhere"), filepath.Join(b, "dangling"))
	chmod(t, locked, 0o000)
	if _, err := os.ReadDir(locked); err == nil {
		t.Skip("running as root: chmod 000 does not block reads")
	}
	c := discover(t, Config{Bundled: []string{b}, User: []string{u}})
	if got := ids(c.Entries()); !reflect.DeepEqual(got, []string{"open"}) {
		t.Errorf("entries = %v", got)
	}
	if got, want := problemKinds(c), []string{"unreadable:dangling", "unreadable:locked", "shadowed:Locked"}; !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %v, want %v", got, want)
	}
	if _, err := Declared(Config{Bundled: []string{b}}); err == nil {
		t.Error("Declared err = nil, want cannot tell for the locked skill directory")
	}
}

// A directory entry that cannot be looked into is reported and keeps its
// identity: a later root cannot take the name while it is unreadable.
func TestDiscoverDanglingSymlink(t *testing.T) {
	base := t.TempDir()
	b, u := filepath.Join(base, "b"), filepath.Join(base, "u")
	mkSkill(t, b, "ok", okDoc(""))
	symlink(t, filepath.Join(base, "nowhere"), filepath.Join(b, "dangling"))
	mkSkill(t, u, "Dangling", okDoc(""))
	c := discover(t, Config{Bundled: []string{b}, User: []string{u}})
	if got := problemKinds(c); !reflect.DeepEqual(got, []string{"unreadable:dangling", "shadowed:Dangling"}) {
		t.Errorf("problems = %v", got)
	}
	if got := ids(c.Loadable()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("loadable = %v", got)
	}
}

func TestDeclared(t *testing.T) {
	base := t.TempDir()
	b, i, u := filepath.Join(base, "b"), filepath.Join(base, "i"), filepath.Join(base, "u")
	mkSkill(t, b, "plain", "no frontmatter, no exec\n")
	mkSkill(t, b, "named", doc("", "name: hello.chorus"))           // no exec: still declared
	mkSkill(t, i, "broken", doc("", "name: 'unterminated"))         // unparseable: dir name
	mkSkill(t, i, "badid", doc("", "name: Not An Id", "exec: x y")) // not validated
	write(t, filepath.Join(i, "gone", "run.sh"), script, 0o755)     // no SKILL.md: not declared
	write(t, filepath.Join(u, "coll", "COLLECTION.json"), "{", 0o644)
	mkSkill(t, filepath.Join(u, "coll"), "member", okDoc(""))
	mkSkill(t, u, "dup", doc("", "name: hello.chorus")) // first one wins

	got, err := Declared(Config{Bundled: []string{b}, Installed: i, User: []string{u, filepath.Join(base, "missing")}})
	if err != nil {
		t.Fatalf("Declared: %v", err)
	}
	want := map[string]string{
		"plain":        filepath.Join(b, "plain"),
		"hello.chorus": filepath.Join(b, "named"),
		"broken":       filepath.Join(i, "broken"),
		"Not An Id":    filepath.Join(i, "badid"),
		"member":       filepath.Join(u, "coll", "member"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Declared =\n %v\nwant\n %v", got, want)
	}
	if got, err := Declared(Config{}); err != nil || len(got) != 0 {
		t.Errorf("Declared(zero) = %v, %v", got, err)
	}
}

func BenchmarkDiscover(b *testing.B) {
	root := b.TempDir()
	for n := range 100 {
		mkSkill(b, root, fmt.Sprintf("skill-%03d", n), doc("A benchmark skill.\n",
			fmt.Sprintf("name: skill-%03d", n), "exec: run.sh", "requirements: [network, gui]",
			"description: >", "  folded text", "  over lines"))
	}
	cfg := Config{Bundled: []string{root}}
	for b.Loop() {
		c, err := Discover(cfg)
		if err != nil || len(c.Loadable()) != 100 {
			b.Fatalf("Discover: %v", err)
		}
	}
}
