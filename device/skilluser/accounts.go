package skilluser

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Config configures Open. Range, StateFile, HomeRoot and SettingsRoot are
// required.
type Config struct {
	Range        Range
	StateFile    string // the persisted map skill id -> uid, mode 0600
	HomeRoot     string // each skill's home is <HomeRoot>/<id>
	SettingsRoot string // each skill's settings directory is <SettingsRoot>/<id>
	AgentGID     int    // group of the settings directories; default os.Getegid()
	Logger       *slog.Logger

	idFiles idFiles // the host's account files; tests replace them
}

// Account is what a skill process runs as.
type Account struct {
	UID, GID uint32
	Home     string // its own writable directory (HOME)
}

// Accounts allocates and prepares skill accounts. Its methods are safe for
// concurrent use.
type Accounts struct {
	cfg  Config
	log  *slog.Logger
	lock *rangeLock

	// mu guards uids and serialises the state file's writes: an allocation
	// must be on disk before the uid is used, so the write is part of it.
	mu   sync.Mutex
	uids map[string]uint32
}

// stateFile is the persisted allocation.
type stateFile struct {
	Range string            `json:"range"`
	UIDs  map[string]uint32 `json:"uids"`
}

// Open checks the range against the host's accounts, takes the host-wide
// claim on it, loads the allocation and makes HomeRoot and SettingsRoot
// reachable by skill uids. It refuses a layout a skill could not reach: every
// ancestor of both roots must let others search it (mode o+x).
func Open(cfg Config) (*Accounts, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Range.checkFree(cfg.idFiles); err != nil {
		return nil, fmt.Errorf("skill accounts: %w", err)
	}
	uids, err := loadState(cfg.StateFile, cfg.Range)
	if err != nil {
		return nil, fmt.Errorf("skill accounts: %w", err)
	}
	for _, root := range []string{cfg.HomeRoot, cfg.SettingsRoot} {
		if err := makeRoot(root); err != nil {
			return nil, fmt.Errorf("skill accounts: %w", err)
		}
	}
	lock, err := claimRange(cfg.Range)
	if err != nil {
		return nil, fmt.Errorf("skill accounts: %w", err)
	}
	return &Accounts{cfg: cfg, log: cfg.Logger.With("component", "skilluser"), lock: lock, uids: uids}, nil
}

func (c *Config) setDefaults() error {
	if c.StateFile == "" || c.HomeRoot == "" || c.SettingsRoot == "" || c.Range.First == 0 {
		return errors.New("skill accounts: range, state file, home root and settings root are required")
	}
	if c.AgentGID == 0 {
		c.AgentGID = os.Getegid()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.idFiles == (idFiles{}) {
		c.idFiles = hostIDFiles
	}
	return nil
}

// Range returns the uid range.
func (a *Accounts) Range() Range { return a.cfg.Range }

// Account returns skill's account, allocating and persisting a uid the first
// time, and prepares its home and settings directory.
func (a *Accounts) Account(skill string) (Account, error) {
	if err := topic.ValidSkillID(skill); err != nil {
		return Account{}, fmt.Errorf("skill account: %w", err)
	}
	uid, err := a.uid(skill)
	if err != nil {
		return Account{}, fmt.Errorf("skill account %s: %w", skill, err)
	}
	acc := Account{UID: uid, GID: uid, Home: filepath.Join(a.cfg.HomeRoot, skill)}
	if err := ownDir(acc.Home, 0o700, int(uid), int(uid)); err != nil {
		return Account{}, fmt.Errorf("skill account %s: home: %w", skill, err)
	}
	settingsDir := filepath.Join(a.cfg.SettingsRoot, skill)
	if err := ownDir(settingsDir, 0o770, int(uid), a.cfg.AgentGID); err != nil {
		return Account{}, fmt.Errorf("skill account %s: settings: %w", skill, err)
	}
	return acc, nil
}

// uid returns the skill's uid, allocating the lowest free one.
func (a *Accounts) uid(skill string) (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uid, ok := a.uids[skill]; ok {
		return uid, nil
	}
	used := make(map[uint32]bool, len(a.uids))
	for _, u := range a.uids {
		used[u] = true
	}
	for u := a.cfg.Range.First; ; u++ {
		if !used[u] {
			a.uids[skill] = u
			if err := saveState(a.cfg.StateFile, a.cfg.Range, a.uids); err != nil {
				delete(a.uids, skill)
				return 0, err
			}
			a.log.Info("skill uid allocated", "skill_id", skill, "uid", u)
			return u, nil
		}
		if u == a.cfg.Range.Last {
			return 0, fmt.Errorf("uid range %s is full (%d skills); widen skills.uid_range", a.cfg.Range, len(a.uids))
		}
	}
}

// Close releases the claim on the range. It is idempotent.
func (a *Accounts) Close() error { return a.lock.release() }

func loadState(path string, r Range) (map[string]uint32, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]uint32{}, nil
	}
	if err != nil {
		return nil, err
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read %s: %w (remove it to allocate again)", path, err)
	}
	uids := map[string]uint32{}
	for id, u := range st.UIDs {
		if r.Contains(u) { // an id outside a changed range is allocated again
			uids[id] = u
		}
	}
	return uids, nil
}

func saveState(path string, r Range, uids map[string]uint32) error {
	b, err := json.MarshalIndent(stateFile{Range: r.String(), UIDs: uids}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save skill uids: %w", err)
	}
	return nil
}

// makeRoot creates root (0711: skills may pass through it to their own
// entry, never list it) and checks every ancestor lets others search it.
func makeRoot(root string) error {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return err
	}
	return Reachable(root)
}

// Reachable checks that a process of any other uid can search every directory
// from / down to dir, with an error naming the first one it cannot and the fix.
func Reachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("skills running under their own uids cannot reach %s: %s is mode %04o; "+
				"run chmod o+x %s, or set skills.isolation to none (docs/install.md)", dir, p, st.Mode().Perm(), p)
		}
		if p == "/" {
			return nil
		}
	}
}

// ownDir makes dir a real directory (never a symlink) owned by uid:gid with
// mode perm. A missing one is created; one the agent owns (the installer
// wrote the settings first) is handed over, mode first, so no capability
// beyond CAP_CHOWN is needed.
func ownDir(dir string, perm os.FileMode, uid, gid int) error {
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) == uid && int(sys.Gid) == gid {
		return nil // the skill's own: its mode is its business
	}
	if int(sys.Uid) == os.Geteuid() {
		if err := os.Chmod(dir, perm); err != nil {
			return err
		}
	}
	return os.Lchown(dir, uid, gid)
}
