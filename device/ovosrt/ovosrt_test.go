package ovosrt_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/ovosrt"
	"github.com/chorus-edge/chorus/device/ovosrt/ovostest"
)

const skillID = "ovos-skill-hello-world.openvoiceos"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// A source tree becomes a skill directory with SKILL.md and its wheel; the
// wheels install offline into site/, where Python finds the skill by its
// opm.skills entry point, as the launcher does.
func TestBuildAndInstall(t *testing.T) {
	ovostest.NeedPip(t)
	src := filepath.Join(t.TempDir(), "src")
	ovostest.WriteSource(t, src, skillID)
	if !ovosrt.IsSource(src) {
		t.Fatal("IsSource = false for a setup.py tree")
	}
	b, err := ovosrt.Build(ctx(t), ovostest.Python, src, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != skillID || b.Package != ovostest.Dist(skillID) || b.Version != "1.0.0" {
		t.Fatalf("built %+v", b)
	}
	doc, _ := os.ReadFile(filepath.Join(b.Dir, "SKILL.md"))
	for _, want := range []string{"name: " + skillID, "runtime: ovos", "version: 1.0.0", "python_package: " + b.Package} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("SKILL.md lacks %q:\n%s", want, doc)
		}
	}
	wheels, err := ovosrt.Wheels(b.Dir)
	if err != nil || len(wheels) != 1 {
		t.Fatalf("wheels %v %v", wheels, err)
	}
	// The same sources give the same wheel.
	again, err := ovosrt.Build(ctx(t), ovostest.Python, src, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := os.ReadFile(wheels[0])
	w2s, _ := ovosrt.Wheels(again.Dir)
	w2, _ := os.ReadFile(w2s[0])
	if string(w1) != string(w2) {
		t.Error("two builds of the same sources differ")
	}

	if err := ovosrt.Install(ctx(t), ovostest.Python, b.Dir); err != nil {
		t.Fatal(err)
	}
	find := exec.Command(ovostest.Python, "-c",
		"from importlib import metadata; print([e.name for e in metadata.entry_points(group='opm.skills')])")
	find.Env = []string{"PYTHONPATH=" + filepath.Join(b.Dir, ovosrt.SiteDir)}
	out, err := find.CombinedOutput()
	if err != nil || !strings.Contains(string(out), skillID) {
		t.Fatalf("entry points after install: %v %s", err, out)
	}
}

// A broken wheel fails with pip's own words; a skill without wheels
// installs nothing.
func TestInstallBadWheel(t *testing.T) {
	ovostest.NeedPip(t)
	dir := t.TempDir()
	if err := ovosrt.Install(ctx(t), ovostest.Python, dir); err != nil {
		t.Fatalf("no wheels: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ovosrt.WheelsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ovosrt.WheelsDir, "broken-1.0-py3-none-any.whl"), []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := ovosrt.Install(ctx(t), ovostest.Python, dir)
	if err == nil || !strings.Contains(err.Error(), "pip install broken-1.0-py3-none-any.whl") || !strings.Contains(err.Error(), "is invalid") {
		t.Fatalf("err = %v, want pip's complaint about the file", err)
	}
}

func TestBuildRefusals(t *testing.T) {
	ovostest.NeedPip(t)
	// A Chorus skill directory is not a source tree.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "setup.py"), []byte(""), 0o644)
	if _, err := ovosrt.Build(ctx(t), ovostest.Python, dir, "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "not an OVOS skill source tree") {
		t.Errorf("SKILL.md tree: %v", err)
	}
	// A Python package without the entry point names the fix.
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "setup.py"), []byte("from setuptools import setup\nsetup(name='plain', version='1.0', py_modules=[])\n"), 0o644)
	if _, err := ovosrt.Build(ctx(t), ovostest.Python, src, "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "opm.skills") {
		t.Errorf("no entry point: %v", err)
	}
}

func TestEntryPoints(t *testing.T) {
	text := "[console_scripts]\nx = a:b\n\n[opm.skills]\n# comment\nskill.one = pkg:Skill\n skill.two=pkg:Other \n[other]\ny = c:d\n"
	if got := strings.Join(ovosrt.EntryPoints(text, "opm.skills"), ","); got != "skill.one,skill.two" {
		t.Errorf("got %s", got)
	}
}
