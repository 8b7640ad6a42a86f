package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxReadSize caps ReadFile (and so SKILL.md and COLLECTION.json): a skill
// document is prose, not a payload.
const MaxReadSize = 1 << 20

// Errors callers may branch on; every error from this file wraps one of
// them or an fs error (fs.ErrNotExist, fs.ErrPermission).
var (
	// ErrEscapes: the path leaves the skill directory ("..", absolute, or a
	// symlink that resolves outside it).
	ErrEscapes = errors.New("escapes skill directory")
	// ErrNotRegular: the path is a directory, device, FIFO or socket.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than MaxReadSize.
	ErrTooLarge = errors.New("file too large")
	// ErrChanged: the exec target's sha256 differs from the one recorded at
	// discovery.
	ErrChanged = errors.New("changed since discovery; rescan to accept")
)

// contained is a file opened inside a skill directory.
type contained struct {
	f    *os.File
	path string // absolute, symlinks resolved
}

// openContained opens rel inside dir and guarantees the file it opens is
// inside dir: rel must be local (not absolute, no ".." escape), and after
// filepath.EvalSymlinks on both, the target must still lie within dir. The
// open then goes through an os.Root on the resolved directory, so a symlink
// swapped in after the check cannot lead outside either. Only regular files
// are opened (a FIFO would block the scan).
func openContained(dir, rel string) (*contained, error) {
	if rel == "" {
		return nil, fmt.Errorf("empty path: %w", fs.ErrNotExist)
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return nil, ErrEscapes
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	target, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		return nil, err
	}
	inside, err := filepath.Rel(realDir, target)
	if err != nil || !filepath.IsLocal(inside) {
		return nil, ErrEscapes
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Lstat(inside); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := root.OpenFile(inside, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return &contained{f: f, path: target}, nil
}

// ReadFile reads rel inside skillDir, refusing any path that escapes it
// (ErrEscapes), anything but a regular file (ErrNotRegular) and anything
// larger than MaxReadSize (ErrTooLarge). seeds/002: SkillLoader.read.
func ReadFile(skillDir, rel string) ([]byte, error) {
	c, err := openContained(skillDir, rel)
	if err != nil {
		return nil, fmt.Errorf("read %q in %s: %w", rel, skillDir, err)
	}
	defer c.f.Close()
	data, err := io.ReadAll(io.LimitReader(c.f, MaxReadSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %q in %s: %w", rel, skillDir, err)
	}
	if len(data) > MaxReadSize {
		return nil, fmt.Errorf("read %q in %s: %w (over %d bytes)", rel, skillDir, ErrTooLarge, MaxReadSize)
	}
	return data, nil
}

// gateResult is the outcome of the exec gate: on success path and sha256
// are set; otherwise reason says why the skill is invalid.
type gateResult struct {
	path   string
	sha256 string
	reason string
}

// gateExec is the sidecar gate (SKILL_MANAGER §1, seeds/002: sidecar_gate):
// exec must be one relative path to a regular, executable file inside dir,
// reached without escaping it. It records the target's sha256.
func gateExec(dir, rel string) gateResult {
	if rel == "" {
		return gateResult{reason: "no exec"}
	}
	if filepath.IsAbs(rel) {
		return gateResult{reason: "exec must be a relative path"}
	}
	c, err := openContained(dir, rel)
	if err != nil {
		return gateResult{reason: gateReason(rel, err)}
	}
	defer c.f.Close()
	fi, err := c.f.Stat()
	if err != nil {
		return gateResult{reason: fmt.Sprintf("exec unreadable: %v", err)}
	}
	if fi.Mode()&0o111 == 0 {
		return gateResult{reason: fmt.Sprintf("exec not executable: %s has no execute permission (chmod +x %s)", rel, rel)}
	}
	sum, err := hashFile(c.f)
	if err != nil {
		return gateResult{reason: fmt.Sprintf("exec unreadable: %v", err)}
	}
	return gateResult{path: c.path, sha256: sum}
}

// gateReason turns an openContained error into an invalid reason.
func gateReason(rel string, err error) string {
	switch {
	case errors.Is(err, ErrEscapes):
		return "exec escapes skill directory"
	case errors.Is(err, ErrNotRegular):
		return "exec is not a regular file"
	case errors.Is(err, fs.ErrNotExist):
		if containsBlank(rel) {
			return fmt.Sprintf("exec not found: %q (exec is one path, no arguments)", rel)
		}
		return fmt.Sprintf("exec not found: %q", rel)
	default:
		return fmt.Sprintf("exec unreadable: %v", err)
	}
}

func containsBlank(s string) bool {
	for _, r := range s {
		if r == ' ' || r == '\t' {
			return true
		}
	}
	return false
}

func hashFile(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// VerifyExec runs the exec gate again at launch and compares the target's
// sha256 with the one recorded at discovery. A difference is refused with
// an error wrapping ErrChanged ("changed since discovery; rescan to
// accept"); a target that now fails the gate is refused too. SKILL_MANAGER
// §1. The file can still change between this check and exec(2); the check
// makes drift visible, it is not a sandbox.
func (s Skill) VerifyExec() error {
	if !s.Valid {
		return fmt.Errorf("verify exec of skill %s: skill is invalid: %s", s.ID, s.Invalid)
	}
	if s.Runtime == RuntimeOVOS {
		return nil // no exec: the agent runs its configured launcher
	}
	g := gateExec(s.Dir, s.ExecRel)
	if g.reason != "" {
		return fmt.Errorf("verify exec of skill %s: %s", s.ID, g.reason)
	}
	if g.sha256 != s.ExecSHA256 || g.path != s.Exec {
		return fmt.Errorf("verify exec of skill %s: %s %w", s.ID, g.path, ErrChanged)
	}
	return nil
}
