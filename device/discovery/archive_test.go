package discovery

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/artifact"
)

// CheckArchive reads the packed bytes, not the directory: a skill without
// a declared name takes its directory's, and what is not one valid skill is
// refused with the reason.
func TestCheckArchive(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // the skill's id, or an error substring
		ok    bool
	}{
		{"named", map[string]string{"SKILL.md": "---\nname: one.skill\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"}, "one.skill", true},
		{"default name", map[string]string{"SKILL.md": "---\nexec: run.sh\n---\n", "run.sh": "#!/bin/sh\n"}, "hello.dir", true},
		{"no SKILL.md", map[string]string{"README": "hi"}, "not a skill directory: no SKILL.md in ", false},
		{"no exec", map[string]string{"SKILL.md": "---\nname: x.chorus\n---\n"}, "invalid skill x.chorus: ", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hello.dir")
			for name, body := range tc.files {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			if _, err := artifact.Pack(dir, &buf); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil { // only the archive is checked
				t.Fatal(err)
			}
			s, err := CheckArchive(dir, buf.Bytes())
			switch {
			case tc.ok && (err != nil || s.ID != tc.want):
				t.Errorf("CheckArchive = %q, %v; want %s", s.ID, err, tc.want)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckArchive error %v, want %q", err, tc.want)
			}
		})
	}
}
