package ovosrt

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Directories inside a runtime ovos skill directory.
const (
	WheelsDir = "wheels" // the wheels the archive carries
	SiteDir   = "site"   // where they are installed (the launcher's PYTHONPATH)
)

// Install installs the wheels of the unpacked skill at dir into dir/site
// with python's pip, offline: no package index (--no-index), no
// dependency resolution (--no-deps: the satellite's OVOS venv provides
// ovos-workshop and the rest; what it lacks travels in the wheelhouse), no
// user or environment pip configuration (--isolated). A skill without
// wheels installs nothing. The error carries pip's own output.
func Install(ctx context.Context, python, dir string) error {
	wheels, err := Wheels(dir)
	if err != nil || len(wheels) == 0 {
		return err
	}
	if python == "" {
		return fmt.Errorf("install python packages: no python to run pip with (set skills.ovos.python to the OVOS venv's bin/python3)")
	}
	args := []string{"-m", "pip", "install", "--isolated", "--no-index", "--no-deps", "--no-cache-dir",
		"--disable-pip-version-check", "--no-warn-script-location", "--no-compile", "--target", filepath.Join(dir, SiteDir)}
	cmd := exec.CommandContext(ctx, python, append(args, wheels...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pip install %s: %w: %s", strings.Join(baseNames(wheels), " "), err, lastLines(out.String(), 12))
	}
	return nil
}

// Wheels lists dir/wheels/*.whl, sorted; none is not an error.
func Wheels(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, WheelsDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list wheels: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".whl") {
			out = append(out, filepath.Join(dir, WheelsDir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// lastLines keeps the end of a tool's output, where the reason is.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
