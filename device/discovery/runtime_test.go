package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRuntimeOVOS(t *testing.T) {
	cases := []struct {
		doc     string
		valid   bool
		invalid string
	}{
		{"runtime: ovos\npython_package: ovos-skill-hello-world\n", true, ""},
		{"runtime: OVOS\n", true, ""},
		{"runtime: ovos\nexec: run.sh\n", false, "takes no exec"},
		{"runtime: ovos\nready: on-start\n", false, "takes no ready"},
		{"runtime: jvm\nexec: run.sh\n", false, `invalid runtime "jvm"`},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "ovos-skill-hello-world.openvoiceos")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\ndescription: hello\n"+c.doc+"---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s := loadSkill(dir)
		if s.Valid != c.valid || !strings.Contains(s.Invalid, c.invalid) {
			t.Errorf("%q: valid %v invalid %q, want %v %q", c.doc, s.Valid, s.Invalid, c.valid, c.invalid)
			continue
		}
		if !c.valid {
			continue
		}
		if s.Runtime != RuntimeOVOS || s.Exec != "" || s.Version != s.DocSHA256[:12] || s.VerifyExec() != nil {
			t.Errorf("%q: %+v", c.doc, s)
		}
		if strings.Contains(c.doc, "python_package") && s.PythonPackage != "ovos-skill-hello-world" {
			t.Errorf("python_package = %q", s.PythonPackage)
		}
	}
}
