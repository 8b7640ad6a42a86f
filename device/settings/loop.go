package settings

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// run owns the debounce state; it exits when the fsnotify watcher is closed.
func (w *Watcher) run() {
	defer close(w.done)
	d := newDebouncer(w.cfg.Debounce)
	defer d.stop()
	for {
		select {
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			w.handle(ev, d)
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			w.handleError(err, d)
		case <-d.timer.C:
			for _, skill := range d.due(time.Now()) {
				w.cfg.Emit(skill)
			}
		}
	}
}

// handle classifies one event: a new directory in root is a skill directory
// to watch; any non-Chmod event on <root>/<skill>/settings.json marks skill.
func (w *Watcher) handle(ev fsnotify.Event, d *debouncer) {
	if ev.Op == fsnotify.Chmod {
		return
	}
	name := filepath.Clean(ev.Name)
	dir := filepath.Dir(name)
	switch {
	case dir == w.root && ev.Has(fsnotify.Create):
		if fi, err := os.Stat(name); err == nil && fi.IsDir() {
			w.addSkillDir(filepath.Base(name), d)
		}
	case filepath.Dir(dir) == w.root && filepath.Base(name) == FileName:
		d.mark(filepath.Base(dir))
	}
}

// handleError logs; after an overflow it rescans, since events were lost.
func (w *Watcher) handleError(err error, d *debouncer) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.cfg.Logger.Warn("settings watcher lost events; rescanning", "root", w.root, "err", err)
		w.addSkillDirs(d)
		return
	}
	w.cfg.Logger.Warn("settings watcher", "root", w.root, "err", err)
}
