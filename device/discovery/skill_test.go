package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestLoadSkillFields(t *testing.T) {
	long := strings.Repeat("word ", 60)
	tests := []struct {
		name  string
		dir   string
		doc   string
		check func(t *testing.T, s Skill, d string)
	}{
		{"defaults", "hello.skill", doc("# Hello\n\nFirst   paragraph\nwraps here.\n\nSecond.\n", "exec: run.sh"),
			func(t *testing.T, s Skill, d string) {
				want := Skill{ID: "hello.skill", Dir: d, Description: "First paragraph wraps here.",
					Version: sha(script)[:12], Exec: filepath.Join(d, "run.sh"), ExecRel: "run.sh",
					ExecSHA256: sha(script), Requirements: []string{}, Ready: ReadyMessage,
					Origin: "unknown", Valid: true}
				want.DocSHA256 = s.DocSHA256
				if !reflect.DeepEqual(s, want) {
					t.Errorf("skill:\n got %+v\nwant %+v", s, want)
				}
			}},
		{"declared keys", "dir", doc("Body.\n", "name: hello.chorus", `description: "Says # hello"`,
			"version: 1.2.0 # semver", "exec: 'run.sh'", "ready: On-Start", "origin: personal",
			"requirements: Internet, gpu,internet"),
			func(t *testing.T, s Skill, d string) {
				got := []any{s.ID, s.Name, s.Description, s.Version, s.Ready, s.Origin, s.Requirements, s.Valid}
				want := []any{"hello.chorus", "hello.chorus", "Says # hello", "1.2.0", ReadyOnStart, "personal", []string{"internet", "gpu"}, true}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
			}},
		{"description from folded block, collapsed", "d", doc("", "exec: run.sh", "description: >", "  one   two", "", "  three"),
			func(t *testing.T, s Skill, d string) {
				if s.Description != "one two three" {
					t.Errorf("description = %q", s.Description)
				}
			}},
		{"description cut to 200 runes", "d", doc("", "exec: run.sh", "description: "+long),
			func(t *testing.T, s Skill, d string) {
				if r := []rune(s.Description); len(r) != 200 || !strings.HasSuffix(s.Description, "...") {
					t.Errorf("description has %d runes: %q", len(r), s.Description)
				}
			}},
		{"description of headings only", "d", doc("## Only a heading\n", "exec: run.sh"),
			func(t *testing.T, s Skill, d string) {
				if s.Description != "Only a heading" {
					t.Errorf("description = %q", s.Description)
				}
			}},
		{"no frontmatter: listed, no exec", "plain", "Just prose.\n",
			func(t *testing.T, s Skill, d string) {
				if s.Valid || s.Invalid != "no exec" || s.Description != "Just prose." || s.Version != sha("Just prose.\n")[:12] {
					t.Errorf("got valid=%v invalid=%q description=%q version=%q", s.Valid, s.Invalid, s.Description, s.Version)
				}
			}},
		{"requirements YAML list", "d", doc("", "exec: run.sh", "requirements:", "  - GUI", "  - network", "  - gui"),
			func(t *testing.T, s Skill, d string) {
				if !reflect.DeepEqual(s.Requirements, []string{"gui", "network"}) {
					t.Errorf("requirements = %q", s.Requirements)
				}
			}},
		{"requirements inline list", "d", doc("", "exec: run.sh", "requirements: [network, 'GPU']"),
			func(t *testing.T, s Skill, d string) {
				if !reflect.DeepEqual(s.Requirements, []string{"network", "gpu"}) {
					t.Errorf("requirements = %q", s.Requirements)
				}
			}},
		{"requirements one word", "d", doc("", "exec: run.sh", "requirements: internet"),
			func(t *testing.T, s Skill, d string) {
				if !reflect.DeepEqual(s.Requirements, []string{"internet"}) {
					t.Errorf("requirements = %q", s.Requirements)
				}
			}},
		{"requirements bracketed string", "d", doc("", "exec: run.sh", `requirements: "[network, gui]"`),
			func(t *testing.T, s Skill, d string) {
				if !reflect.DeepEqual(s.Requirements, []string{"network", "gui"}) {
					t.Errorf("requirements = %q", s.Requirements)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mkSkill(t, t.TempDir(), tt.dir, tt.doc)
			tt.check(t, loadSkill(d), d)
		})
	}
}

func TestLoadSkillInvalid(t *testing.T) {
	tests := []struct {
		name   string
		dir    string
		doc    string
		setup  func(t *testing.T, d string)
		reason string
	}{
		{"no exec", "a", doc("", "name: a"), nil, "no exec"},
		{"unparseable", "a", doc("", "name: 'a"), nil, "unparseable SKILL.md: frontmatter line 2: unterminated"},
		{"name is a list", "a", doc("", "name: [a, b]", "exec: run.sh"), nil, `unparseable SKILL.md: line 2: key "name" must be a single value`},
		{"invalid declared id", "a", doc("", "name: Hello World", "exec: run.sh"), nil, `invalid id "Hello World"`},
		{"invalid dir id", "my skill", doc("", "exec: run.sh"), nil, `invalid id "my skill"`},
		{"id starting with dot", "a", doc("", "name: .hidden", "exec: run.sh"), nil, "invalid id"},
		{"id starting with dash", "a", doc("", "name: -x", "exec: run.sh"), nil, "invalid id"},
		{"id too long", "a", doc("", "name: "+strings.Repeat("x", 65), "exec: run.sh"), nil, "invalid id"},
		{"invalid ready", "a", doc("", "exec: run.sh", "ready: eventually"), nil, `invalid ready "eventually"`},
		{"exec absolute", "a", doc("", "exec: /bin/sh"), nil, "exec must be a relative path"},
		{"exec dotdot", "a", doc("", "exec: ../a/run.sh"), nil, "exec escapes skill directory"},
		{"exec missing", "a", doc("", "exec: nope.sh"), nil, `exec not found: "nope.sh"`},
		{"exec with arguments", "a", doc("", "exec: run.sh --flag"), nil, "no arguments"},
		{"exec not executable", "a", doc("", "exec: data.txt"),
			func(t *testing.T, d string) { write(t, filepath.Join(d, "data.txt"), "x", 0o644) }, "exec not executable"},
		{"exec is a directory", "a", doc("", "exec: bin"),
			func(t *testing.T, d string) { write(t, filepath.Join(d, "bin", "x"), "x", 0o755) }, "exec is not a regular file"},
		{"exec symlink out", "a", doc("", "exec: link.sh"),
			func(t *testing.T, d string) {
				out := filepath.Join(filepath.Dir(d), "outside.sh")
				write(t, out, script, 0o755)
				symlink(t, out, filepath.Join(d, "link.sh"))
			}, "exec escapes skill directory"},
		{"exec through symlinked dir out", "a", doc("", "exec: sub/run.sh"),
			func(t *testing.T, d string) {
				out := filepath.Join(filepath.Dir(d), "elsewhere")
				write(t, filepath.Join(out, "run.sh"), script, 0o755)
				symlink(t, out, filepath.Join(d, "sub"))
			}, "exec escapes skill directory"},
		{"SKILL.md symlink out", "a", "",
			func(t *testing.T, d string) {
				out := filepath.Join(filepath.Dir(d), "secret.md")
				write(t, out, okDoc("a"), 0o644)
				symlink(t, out, filepath.Join(d, "SKILL.md"))
			}, "unreadable SKILL.md: read \"SKILL.md\" in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), tt.dir)
			if tt.doc != "" {
				mkSkill(t, filepath.Dir(d), tt.dir, tt.doc)
			} else {
				write(t, filepath.Join(d, "run.sh"), script, 0o755)
			}
			if tt.setup != nil {
				tt.setup(t, d)
			}
			s := loadSkill(d)
			if s.Valid || !strings.Contains(s.Invalid, tt.reason) {
				t.Errorf("valid=%v invalid=%q, want invalid containing %q", s.Valid, s.Invalid, tt.reason)
			}
			if s.Exec != "" || s.ExecSHA256 != "" {
				t.Errorf("invalid skill has exec %q sha %q", s.Exec, s.ExecSHA256)
			}
		})
	}
}

func TestLoadSkillSymlinkInsideIsFine(t *testing.T) {
	d := mkSkill(t, t.TempDir(), "a", doc("", "exec: bin/start"))
	symlink(t, "../run.sh", filepath.Join(d, "bin", "start"))
	s := loadSkill(d)
	if !s.Valid {
		t.Fatalf("invalid: %s", s.Invalid)
	}
	if want := filepath.Join(d, "run.sh"); s.Exec != want {
		t.Errorf("Exec = %q, want the resolved target %q", s.Exec, want)
	}
}

func TestIdentity(t *testing.T) {
	same := [][2]string{
		{"Hello.Skill", "hello.skill"},
		{"ｈｅｌｌｏ.ｓｋｉｌｌ", "hello.skill"}, // fullwidth letters and dot
		{"  hello   world ", "hello world"},
		{"Straße", "strasse"},
		{"\ufb01le", "file"}, // the fi ligature
	}
	for _, p := range same {
		if a, b := Identity(p[0]), Identity(p[1]); a != b {
			t.Errorf("Identity(%q) = %q, Identity(%q) = %q; want equal", p[0], a, p[1], b)
		}
	}
	if Identity("hello.skill") == Identity("hello-skill") {
		t.Error("distinct names share an identity")
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"hello.chorus": true, "A_b-9": true, strings.Repeat("x", 64): true,
		"": false, ".": false, "..": false, "-x": false, ".x": false, "a b": false, "a/b": false,
		"é": false, strings.Repeat("x", 65): false,
	} {
		if got := validID(id); got != want {
			t.Errorf("validID(%q) = %v, want %v", id, got, want)
		}
	}
}
