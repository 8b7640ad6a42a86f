package discovery

import (
	"os"
	"path/filepath"
	"testing"
)

const script = "#!/bin/sh\necho ready\n"

// write creates path (and its parents) with content and mode.
func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// mkSkill writes root/dir/SKILL.md with skillMD and an executable run.sh,
// and returns the skill directory.
func mkSkill(t testing.TB, root, dir, skillMD string) string {
	t.Helper()
	d := filepath.Join(root, dir)
	write(t, filepath.Join(d, "SKILL.md"), skillMD, 0o644)
	write(t, filepath.Join(d, "run.sh"), script, 0o755)
	return d
}

// okDoc is a valid SKILL.md declaring name (when not "") and exec run.sh.
func okDoc(name string) string {
	if name == "" {
		return doc("A skill.\n", "exec: run.sh")
	}
	return doc("A skill.\n", "name: "+name, "exec: run.sh")
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func discover(t testing.TB, cfg Config) *Catalog {
	t.Helper()
	c, err := Discover(cfg)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return c
}

func ids(skills []Skill) []string {
	out := []string{}
	for _, s := range skills {
		out = append(out, s.ID)
	}
	return out
}
