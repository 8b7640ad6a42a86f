package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSingle(t *testing.T) {
	tests := []struct {
		name, doc string
		exec      bool
		want      string // error substring; "" = valid
	}{
		{"valid", "---\nname: one.skill\nexec: run.sh\n---\n", true, ""},
		{"no name", "---\nexec: run.sh\n---\n", true, "declares no name"},
		{"no exec", "---\nname: one.skill\n---\n", false, "no exec"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "skill")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(tc.doc), 0o644)
			if tc.exec {
				os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
			}
			s, err := Single(dir)
			if tc.want == "" {
				if err != nil || s.ID != "one.skill" {
					t.Fatalf("Single = %+v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSingleNoSkill: a directory without SKILL.md says what was looked for
// and where (issue 16 §8).
func TestSingleNoSkill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "unpacked")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "README"), []byte("hi"), 0o644)
	_, err := Single(dir)
	if err == nil || !strings.Contains(err.Error(), "want one skill, found 0: no SKILL.md at the top of the skill directory unpacked") {
		t.Fatalf("err = %v", err)
	}
}
