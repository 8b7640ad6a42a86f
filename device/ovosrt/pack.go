package ovosrt

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EntryPointGroup is the entry-point group ovos-plugin-manager finds skills
// in (ovos_plugin_manager/skills.py find_skill_plugins): each entry's name
// is a skill id.
const EntryPointGroup = "opm.skills"

// IsSource reports whether dir looks like an OVOS skill source tree (a
// Python project) rather than a Chorus skill directory.
func IsSource(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err == nil {
		return false
	}
	for _, f := range []string{"setup.py", "pyproject.toml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// Built is a Chorus skill directory made from an OVOS skill source tree.
type Built struct {
	Dir     string // the skill directory, named for the skill id
	ID      string // the opm.skills entry point's name
	Package string // the distribution name
	Version string
}

// Build makes a Chorus skill directory under work from the OVOS skill
// source tree src: it builds src's wheel offline with python's pip (no
// index, no build isolation: the build backend, setuptools, must be
// installed, as Debian's python3-setuptools and python3-wheel are), reads
// the skill id from the wheel's opm.skills entry point and its name,
// version and summary from its metadata, and lays out SKILL.md and
// wheels/ (with every *.whl of wheelhouse, when given). SOURCE_DATE_EPOCH
// is fixed, so the same sources give the same wheel.
func Build(ctx context.Context, python, src, wheelhouse, work string) (Built, error) {
	if !IsSource(src) {
		return Built{}, fmt.Errorf("%s is not an OVOS skill source tree: want setup.py or pyproject.toml (and no SKILL.md)", src)
	}
	out := filepath.Join(work, "build")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Built{}, err
	}
	cmd := exec.CommandContext(ctx, python, "-m", "pip", "wheel", "--isolated", "--no-index", "--no-deps",
		"--no-build-isolation", "--no-cache-dir", "--disable-pip-version-check", "-w", out, src)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "LANG=C.UTF-8", "SOURCE_DATE_EPOCH=315532800"}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return Built{}, fmt.Errorf("build the wheel of %s with %s -m pip wheel: %w: %s", src, python, err, lastLines(log.String(), 12))
	}
	wheels, err := filepath.Glob(filepath.Join(out, "*.whl"))
	if err != nil || len(wheels) != 1 {
		return Built{}, fmt.Errorf("build the wheel of %s: want one wheel, got %d", src, len(wheels))
	}
	b, summary, err := readWheel(wheels[0])
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", filepath.Base(wheels[0]), err)
	}
	b.Dir = filepath.Join(work, b.ID)
	if err := layout(b, summary, wheels[0], wheelhouse); err != nil {
		return Built{}, err
	}
	return b, nil
}

// layout writes b.Dir: SKILL.md and wheels/.
func layout(b Built, summary, wheel, wheelhouse string) error {
	wdir := filepath.Join(b.Dir, WheelsDir)
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		return err
	}
	extra := []string{}
	if wheelhouse != "" {
		var err error
		if extra, err = filepath.Glob(filepath.Join(wheelhouse, "*.whl")); err != nil {
			return err
		}
		if len(extra) == 0 {
			return fmt.Errorf("wheelhouse %s holds no .whl file", wheelhouse)
		}
	}
	for _, w := range append([]string{wheel}, extra...) {
		if err := copyFile(w, filepath.Join(wdir, filepath.Base(w))); err != nil {
			return err
		}
	}
	if summary == "" {
		summary = "The OVOS skill " + b.ID + ", run by ovos-skill-launcher."
	}
	doc := fmt.Sprintf("---\nname: %s\nversion: %s\ndescription: %s\nruntime: ovos\npython_package: %s\n---\n# %s\n\nPacked by chorus skill pack from the Python package %s %s.\n",
		b.ID, b.Version, oneLine(summary), b.Package, b.ID, b.Package, b.Version)
	return os.WriteFile(filepath.Join(b.Dir, "SKILL.md"), []byte(doc), 0o644)
}

// readWheel reads the skill id from the wheel's entry points and its
// distribution name, version and summary from its metadata.
func readWheel(path string) (Built, string, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return Built{}, "", err
	}
	defer zr.Close()
	var eps, meta string
	for _, f := range zr.File {
		dir, name := filepath.Split(f.Name)
		if !strings.HasSuffix(strings.TrimSuffix(dir, "/"), ".dist-info") || strings.Count(f.Name, "/") != 1 {
			continue
		}
		switch name {
		case "entry_points.txt":
			eps, err = readZipFile(f)
		case "METADATA":
			meta, err = readZipFile(f)
		}
		if err != nil {
			return Built{}, "", err
		}
	}
	ids := EntryPoints(eps, EntryPointGroup)
	switch len(ids) {
	case 0:
		return Built{}, "", errors.New(`no opm.skills entry point: declare one, e.g. entry_points={"opm.skills": ["<skill_id> = <package>:<SkillClass>"]}`)
	case 1:
	default:
		return Built{}, "", fmt.Errorf("%d opm.skills entry points (%s): a Chorus skill is one OVOS skill; pack each separately", len(ids), strings.Join(ids, ", "))
	}
	b := Built{ID: ids[0], Package: header(meta, "Name"), Version: header(meta, "Version")}
	if b.Package == "" || b.Version == "" {
		return Built{}, "", errors.New("wheel metadata without Name or Version")
	}
	return b, header(meta, "Summary"), nil
}

// EntryPoints lists the entry names of group in an entry_points.txt.
func EntryPoints(text, group string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			in = strings.TrimSpace(strings.Trim(line, "[]")) == group
		case in:
			if name, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(name) != "" {
				out = append(out, strings.TrimSpace(name))
			}
		}
	}
	return out
}

// header reads one "Key: value" header of a METADATA file (RFC 822 style;
// the headers end at the first blank line).
func header(meta, key string) string {
	for _, line := range strings.Split(meta, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, key) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readZipFile(f *zip.File) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	return string(b), err
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// oneLine keeps a summary on one YAML line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer(":", " -", "#", "").Replace(s)
}
