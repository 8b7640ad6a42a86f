package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skilluser"
)

// The values of skills.isolation and of the birth's "isolation"
// (docs/security.md, "Skill isolation").
const (
	IsolationAuto = "auto" // uid when the agent can switch uids, else none
	IsolationUID  = "uid"  // each skill under its own uid
	IsolationNone = "none" // skills run as the agent's own user
)

// isolation is what the agent decided at start; the birth reports Mode.
type isolation struct {
	Mode     string
	accounts *skilluser.Accounts // nil unless Mode is uid
	dropCaps bool                // the agent holds capabilities skills must not inherit
}

// openIsolation decides how skills run (skills.isolation) and prepares it.
// With uid it makes the data dir reachable for skill uids, opens the skill
// accounts and kills whatever a previous run left under their uids. Where
// it falls back to none it says so once, at WARN.
func (a *Agent) openIsolation() (*isolation, error) {
	caps, err := skilluser.ReadCaps("self")
	if err != nil {
		return nil, fmt.Errorf("skill isolation: %w", err)
	}
	iso := &isolation{Mode: IsolationNone, dropCaps: caps.Any()}
	missing := caps.Missing()
	switch mode := a.cfg.Skills.Isolation; mode {
	case IsolationNone:
		a.log.Warn("skills run as the agent's own user: skills.isolation is none; a skill can read the agent's credentials and signal it (docs/security.md)",
			"uid", os.Geteuid())
		return iso, nil
	case IsolationAuto, "":
		if len(missing) > 0 {
			a.log.Warn("skills run as the agent's own user: it cannot switch uids without "+strings.Join(missing, ", ")+
				"; a skill can read the agent's credentials and signal it (run the agent as root or with those capabilities: docs/install.md)",
				"uid", os.Geteuid(), "isolation", IsolationNone)
			return iso, nil
		}
	case IsolationUID:
		if len(missing) > 0 {
			return nil, fmt.Errorf("skills.isolation is uid but the agent lacks %s (run it as root or grant them: docs/install.md)", strings.Join(missing, ", "))
		}
	default:
		return nil, fmt.Errorf("skills.isolation %q: want auto, uid or none", mode)
	}
	iso.Mode = IsolationUID
	if iso.accounts, err = a.openAccounts(); err != nil {
		return nil, err
	}
	return iso, nil
}

func (a *Agent) openAccounts() (*skilluser.Accounts, error) {
	r, err := skilluser.ParseRange(orDefault(a.cfg.Skills.UIDRange, skilluser.DefaultRange))
	if err != nil {
		return nil, fmt.Errorf("skills.uid_range: %w", err)
	}
	if err := makeSearchable(a.cfg.DataRoot, a.cfg.DataDir, a.log); err != nil {
		return nil, fmt.Errorf("skill isolation: %w", err)
	}
	acc, err := skilluser.Open(skilluser.Config{
		Range: r, StateFile: filepath.Join(a.cfg.DataDir, "skill-uids.json"),
		HomeRoot: filepath.Join(a.cfg.DataDir, "home"), SettingsRoot: a.cfg.Skills.SettingsRoot,
		Logger: a.log,
	})
	if err != nil {
		return nil, err
	}
	if n, err := acc.Sweep(); err != nil {
		a.log.Warn("kill processes a previous run left under skill uids", "error", err)
	} else if n > 0 {
		a.log.Warn("killed processes a previous run left under skill uids", "count", n, "uid_range", r.String())
	}
	a.log.Info("skills run under their own uids", "uid_range", r.String())
	a.checkBinReachable()
	return acc, nil
}

// checkBinReachable warns when a skill uid could not run $CHORUS_BIN (the
// example skills do): the skills that need it would fail at start.
func (a *Agent) checkBinReachable() {
	bin := a.cfg.Bin
	if bin == "" {
		bin, _ = os.Executable()
	}
	st, err := os.Stat(bin)
	if err == nil && st.Mode().Perm()&0o001 == 0 {
		err = fmt.Errorf("%s is mode %04o", bin, st.Mode().Perm())
	}
	if err == nil {
		err = skilluser.Reachable(filepath.Dir(bin))
	}
	if err != nil {
		a.log.Warn("skills under their own uids cannot run $CHORUS_BIN; skills that call it will fail (install chorus where every user can run it, e.g. /usr/local/bin)", "bin", bin, "error", err)
	}
}

// identity is the launcher's Identity in uid mode, nil otherwise.
func (iso *isolation) identity() func(string) (process.Identity, error) {
	if iso.accounts == nil {
		return nil
	}
	return func(skill string) (process.Identity, error) {
		acc, err := iso.accounts.Account(skill)
		return process.Identity{UID: acc.UID, GID: acc.GID, Home: acc.Home}, err
	}
}

func (iso *isolation) close() {
	if iso != nil && iso.accounts != nil {
		_ = iso.accounts.Close()
	}
}

// makeSearchable gives others search permission (o+x, never read) on dir,
// which becomes 0711, and on each parent up to root that the agent owns, so
// a skill uid can reach its own entries below; a parent the agent does not
// own is left as it is (skilluser.Open then names it if it blocks). A skill
// that may pass through a directory may open any file in it whose mode lets
// others read it, so the agent's own regular files directly inside each
// directory it opens lose their permissions for others (the gateway's
// database under `chorus up`, for one): only code and the skills' own
// state stay within a skill's reach.
func makeSearchable(root, dir string, log *slog.Logger) error {
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	if err := privateFiles(dir, log); err != nil {
		return err
	}
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	if root == dir || !strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if owned, err := addSearch(p); err != nil {
			return err
		} else if owned {
			if err := privateFiles(p, log); err != nil {
				return err
			}
		}
		if p == root {
			return nil
		}
	}
}

// addSearch adds o+x to p when the agent owns it, and reports whether it does.
func addSearch(p string) (owned bool, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	if !ownedByUs(st) {
		return false, nil
	}
	if st.Mode().Perm()&0o001 != 0 {
		return true, nil
	}
	return true, os.Chmod(p, st.Mode().Perm()|0o001)
}

// privateFiles removes others' permissions from the agent's own regular
// files directly in dir.
func privateFiles(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		st, err := e.Info()
		if err != nil || !ownedByUs(st) || st.Mode().Perm()&0o007 == 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Chmod(path, st.Mode().Perm()&^0o007); err != nil {
			return err
		}
		log.Warn("made a file in the data dir private: skills under their own uids may pass through its directory", "path", path)
	}
	return nil
}

func ownedByUs(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
