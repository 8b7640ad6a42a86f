package settings

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// DefaultDebounce is how long a settings file must stay quiet before its
// change is reported.
const DefaultDebounce = 200 * time.Millisecond

// Config is what Watch needs. Root is required; the rest has defaults.
type Config struct {
	Root     string             // the settings root; created when missing
	Debounce time.Duration      // quiet time before a change is reported; default 200 ms
	Emit     func(skill string) // called once per debounced change, from the watcher's goroutine
	Logger   *slog.Logger       // default discards
}

func (c Config) withDefaults() Config {
	if c.Debounce <= 0 {
		c.Debounce = DefaultDebounce
	}
	if c.Emit == nil {
		c.Emit = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Watcher reports changes to <Root>/<skill_id>/settings.json. SKILL_MANAGER §8.
//
// Guarantees:
//   - It watches directories, not files (editors replace a file by renaming
//     a new one over it): Root, and every <Root>/<skill_id>/ including those
//     created after Watch. A skill directory that already holds a settings
//     file when it appears is reported as a change.
//   - Any event on a settings file except Chmod (write, create, rename into
//     place, removal) marks its skill changed; Emit(skill) is called once
//     the file has been quiet for Debounce, so one save that produces
//     several events is one call. Emit is called from a single goroutine,
//     never concurrently, and should return quickly.
//   - After an inotify queue overflow (events were lost) it re-adds every
//     skill directory and reports every skill that has a settings file.
//   - Close is idempotent and returns once the goroutine has exited;
//     changes still in their debounce window are dropped.
type Watcher struct {
	cfg       Config
	root      string
	fs        *fsnotify.Watcher
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Watch creates Root if needed and starts watching it.
func Watch(cfg Config) (*Watcher, error) {
	cfg = cfg.withDefaults()
	if cfg.Root == "" {
		return nil, errors.New("watch settings: no settings root")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("watch settings: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("watch settings: create root: %w", err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch settings: %w", err)
	}
	w := &Watcher{cfg: cfg, root: root, fs: fsw, done: make(chan struct{})}
	if err := fsw.Add(root); err != nil {
		_ = fsw.Close()
		return nil, fmt.Errorf("watch settings root %s: %w", root, err)
	}
	w.addSkillDirs(nil)
	go w.run()
	return w, nil
}

// Close stops the watcher and waits for its goroutine. It is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.closeErr = w.fs.Close() // closes Events, which ends run
		<-w.done
	})
	return w.closeErr
}

// addSkillDirs watches every skill directory under root; with d set, it
// also marks each one that holds a settings file.
func (w *Watcher) addSkillDirs(d *debouncer) {
	entries, err := os.ReadDir(w.root)
	if err != nil {
		w.cfg.Logger.Warn("list settings root", "root", w.root, "err", err)
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			w.addSkillDir(e.Name(), d)
		}
	}
}

// addSkillDir watches <root>/<name>/ when name is a skill id. With d set it
// marks the skill changed when its settings file exists: the file may have
// been written before the watch was in place.
func (w *Watcher) addSkillDir(name string, d *debouncer) {
	if topic.ValidSkillID(name) != nil {
		return
	}
	dir := filepath.Join(w.root, name)
	if err := w.fs.Add(dir); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.cfg.Logger.Warn("watch skill settings directory", "dir", dir, "err", err)
		}
		return
	}
	if d != nil {
		if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
			d.mark(name)
		}
	}
}
