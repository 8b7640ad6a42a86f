package settings_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/settings"
)

const debounce = 150 * time.Millisecond

// watch starts a watcher on a fresh root holding the given skill
// directories and returns the root and the channel Emit feeds.
func watch(t *testing.T, skills ...string) (string, <-chan string) {
	t.Helper()
	return watchDebounced(t, debounce, skills...)
}

// watchDebounced is watch with the watcher's debounce d.
func watchDebounced(t *testing.T, d time.Duration, skills ...string) (string, <-chan string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "settings")
	for _, s := range skills {
		if err := os.MkdirAll(filepath.Join(root, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	emits := make(chan string, 64)
	w, err := settings.Watch(settings.Config{Root: root, Debounce: d, Emit: func(id string) { emits <- id }})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return root, emits
}

// expectEmit waits (bounded) for exactly one emit for skill, then for
// silence over three debounce periods.
func expectEmit(t *testing.T, emits <-chan string, skill string) {
	t.Helper()
	select {
	case got := <-emits:
		if got != skill {
			t.Fatalf("Emit(%q), want Emit(%q)", got, skill)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no Emit(%q) within 5s", skill)
	}
	expectNone(t, emits)
}

// expectNone fails on any emit within three debounce periods.
func expectNone(t *testing.T, emits <-chan string) {
	t.Helper()
	select {
	case got := <-emits:
		t.Fatalf("unexpected Emit(%q)", got)
	case <-time.After(3 * debounce):
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameInto writes data to a temporary file next to path and renames it
// over path, as editors do.
func renameInto(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".swp"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherReportsChanges(t *testing.T) {
	t.Parallel()
	const skill = "hello.chorus"
	tests := []struct {
		name     string
		existing bool // settings.json exists before the watcher starts
		change   func(t *testing.T, path string)
	}{
		{name: "create", change: func(t *testing.T, p string) { writeFile(t, p, `{"a":1}`) }},
		{name: "write", existing: true, change: func(t *testing.T, p string) { writeFile(t, p, `{"a":2}`) }},
		{name: "rename into place", existing: true, change: func(t *testing.T, p string) { renameInto(t, p, `{"a":3}`) }},
		{name: "rename creates", change: func(t *testing.T, p string) { renameInto(t, p, `{"a":4}`) }},
		{name: "remove", existing: true, change: func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rapid writes are one change", existing: true, change: func(t *testing.T, p string) {
			for i := range 10 {
				writeFile(t, p, strings.Repeat("x", i))
			}
			renameInto(t, p, `{"a":5}`)
		}},
		{name: "agent write", change: func(t *testing.T, p string) {
			root := filepath.Dir(filepath.Dir(p))
			if err := settings.Write(root, skill, map[string]any{"units": "metric"}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "settings")
			path := settings.Path(root, skill)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.existing {
				writeFile(t, path, `{}`)
			}
			emits := make(chan string, 64)
			w, err := settings.Watch(settings.Config{Root: root, Debounce: debounce, Emit: func(id string) { emits <- id }})
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			defer w.Close()
			tt.change(t, path)
			expectEmit(t, emits, skill)
		})
	}
}

func TestWatcherIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{name: "other file in skill dir", change: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "hello.chorus", "other.json"), "{}")
		}},
		{name: "file in root", change: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "settings.json"), "{}")
		}},
		{name: "nested settings", change: func(t *testing.T, root string) {
			dir := filepath.Join(root, "hello.chorus", "sub")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "settings.json"), "{}")
		}},
		{name: "chmod", change: func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, "hello.chorus", "settings.json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "not a skill id", change: func(t *testing.T, root string) {
			dir := filepath.Join(root, ".staging")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "settings.json"), "{}")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "settings")
			if err := settings.Write(root, "hello.chorus", map[string]any{}); err != nil {
				t.Fatal(err)
			}
			emits := make(chan string, 64)
			w, err := settings.Watch(settings.Config{Root: root, Debounce: debounce, Emit: func(id string) { emits <- id }})
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			defer w.Close()
			tt.change(t, root)
			expectNone(t, emits)
		})
	}
}

func TestWatcherNewSkillDir(t *testing.T) {
	t.Parallel()
	root, emits := watch(t)
	dir := filepath.Join(root, "weather.chorus")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Written at once: the watch on dir may or may not be in place yet;
	// either way this is one change.
	writeFile(t, filepath.Join(dir, "settings.json"), `{"units":"metric"}`)
	expectEmit(t, emits, "weather.chorus")
	// Later changes in the new directory are seen through its own watch.
	renameInto(t, filepath.Join(dir, "settings.json"), `{"units":"imperial"}`)
	expectEmit(t, emits, "weather.chorus")
}

func TestWatcherDebouncesPerSkill(t *testing.T) {
	t.Parallel()
	// A debounce far above the time ten small writes take even on a loaded
	// machine (at 150 ms a stall between two writes split the burst in CI).
	root, emits := watchDebounced(t, 2*time.Second, "a.skill", "b.skill")
	for range 5 {
		writeFile(t, settings.Path(root, "a.skill"), "{}")
		writeFile(t, settings.Path(root, "b.skill"), "{}")
	}
	got := map[string]int{}
	for range 2 {
		select {
		case id := <-emits:
			got[id]++
		case <-time.After(10 * time.Second):
			t.Fatalf("emits so far %v, want one per skill", got)
		}
	}
	if got["a.skill"] != 1 || got["b.skill"] != 1 {
		t.Errorf("emits = %v, want one per skill", got)
	}
	expectNone(t, emits)
}

func TestWatchCreatesRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "a", "b", "settings")
	w, err := settings.Watch(settings.Config{Root: root})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Errorf("root not created: %v", err)
	}
	for range 2 {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

func TestWatchNeedsRoot(t *testing.T) {
	t.Parallel()
	if _, err := settings.Watch(settings.Config{}); err == nil || !strings.Contains(err.Error(), "no settings root") {
		t.Errorf("Watch without a root: err = %v", err)
	}
}
