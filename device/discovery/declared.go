package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Declared returns the skill directories that still hold a SKILL.md, as
// id -> absolute directory, read without validating anything else: the id
// is the frontmatter name when SKILL.md can be read and parsed, else the
// directory name. It walks the same roots and collections as Discover; when
// two directories declare one id, the first in discovery order is kept.
// SKILL_MANAGER §6: a skill is gone only when it is neither loadable nor
// declared.
//
// Declared is the conservative side of that decision, so any doubt is an
// error ("cannot tell", and the caller unloads nothing): a root that exists
// but is not a directory or cannot be listed, and — unlike Discover, which
// reports these as Problems — a skill or collection directory that cannot
// be looked into. A missing root is empty.
func Declared(cfg Config) (map[string]string, error) {
	out := map[string]string{}
	for _, r := range cfg.roots() {
		abs, names, _, err := listRoot(r)
		if err != nil {
			return nil, fmt.Errorf("declared skills: %w", err)
		}
		for _, name := range names {
			if err := declareChild(out, filepath.Join(abs, name), true); err != nil {
				return nil, fmt.Errorf("declared skills: %w", err)
			}
		}
	}
	return out, nil
}

// declareChild records path if it is a skill directory, or walks it when it
// is a collection (only at the top of a root).
func declareChild(out map[string]string, path string, top bool) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed while we looked, or a dangling link: not declared
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil
	}
	if top {
		if ok, err := hasEntry(path, collectionMarker); err != nil {
			return fmt.Errorf("look into %s: %w", path, err)
		} else if ok {
			return declareCollection(out, path)
		}
	}
	ok, err := hasEntry(path, skillDoc)
	if err != nil {
		return fmt.Errorf("look into %s: %w", path, err)
	}
	if ok {
		id := declaredID(path)
		if _, seen := out[id]; !seen {
			out[id] = path
		}
	}
	return nil
}

func declareCollection(out map[string]string, dir string) error {
	names, err := listDir(dir)
	if err != nil {
		return fmt.Errorf("list collection %s: %w", dir, err)
	}
	for _, name := range names {
		if err := declareChild(out, filepath.Join(dir, name), false); err != nil {
			return err
		}
	}
	return nil
}

// declaredID is the frontmatter name of dir/SKILL.md if it can be read,
// else the directory name.
func declaredID(dir string) string {
	if data, err := ReadFile(dir, skillDoc); err == nil {
		if fm, _, err := ParseFrontmatter(string(data)); err == nil {
			if name, err := fm.Text("name"); err == nil && strings.TrimSpace(name) != "" {
				return strings.TrimSpace(name)
			}
		}
	}
	return filepath.Base(dir)
}
