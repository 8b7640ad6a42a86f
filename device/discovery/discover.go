package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Config names the skill roots. Its zero value is valid: no roots, an empty
// catalog.
type Config struct {
	Bundled   []string // read-only roots, scanned first, in order (--skills)
	Installed string   // <data-dir>/installed; "" or missing means none
	User      []string // user roots, scanned last, in order (--user-skills)
}

// collectionMarker makes a directory a collection. seeds/002: COLLECTION_MARKER.
const collectionMarker = "COLLECTION.json"

// root is one directory to scan. Roots of one tier are one trust level:
// all bundled roots share tier 0, installed is tier 1, and each user root
// is its own tier after that.
type root struct {
	kind RootKind
	dir  string
	tier int
}

// roots lists cfg's roots in scan order. SKILL_MANAGER §1.
func (c Config) roots() []root {
	var out []root
	for _, d := range c.Bundled {
		out = append(out, root{kind: RootBundled, dir: d, tier: 0})
	}
	if c.Installed != "" {
		out = append(out, root{kind: RootInstalled, dir: c.Installed, tier: 1})
	}
	for i, d := range c.User {
		out = append(out, root{kind: RootUser, dir: d, tier: 2 + i})
	}
	return out
}

// Discover scans cfg's roots and returns the catalog. SKILL_MANAGER §1.
//
// Order: roots in Config order (bundled, installed, user), then directory
// names in lexical order; a collection's members come at the collection's
// place, in lexical order. Names starting with "." are skipped (installer
// staging, VCS metadata). A directory with COLLECTION.json is a collection
// (its own SKILL.md, if any, is ignored and reported); a directory with
// SKILL.md is a skill; anything else is not a skill and is skipped.
//
// Identity (see Identity) covers both a skill's directory name and its id:
//   - A later tier never shadows an earlier one: the later skill is reported
//     as ProblemShadowed and left out of the catalog. An earlier skill that
//     is invalid, or a directory that could not be read, still holds its
//     identity, so a later root cannot slip in under a name it reserves.
//   - Two skills of one tier with one identity are ambiguous: both stay in
//     the catalog, both are marked invalid, and ProblemDuplicate is reported.
//     For bundled roots (one tier together) this is SKILL_MANAGER's
//     "discovery error, reported, never a crash"; installed and each user
//     root follow the same rule, since neither copy is more right than the
//     other and loading either would be a guess.
//
// A malformed COLLECTION.json is reported (ProblemCollection) and its
// members are still scanned under the directory name: the members are
// self-describing skills, and the marker only names the collection.
//
// The error is only for "cannot tell": a root that exists but is not a
// directory or cannot be listed. A missing root is empty (a missing bundled
// or user root is also reported as ProblemMissingRoot). Unreadable
// subdirectories are Problems, not errors.
func Discover(cfg Config) (*Catalog, error) {
	sc := &scanner{claims: map[string]claim{}}
	for _, r := range cfg.roots() {
		if err := sc.scanRoot(r); err != nil {
			return nil, err
		}
	}
	return newCatalog(sc.entries, sc.problems), nil
}

// claim is the first holder of an identity.
type claim struct {
	tier  int
	entry int // index into entries, -1 for an unreadable directory
	kind  RootKind
	path  string
}

// scanner accumulates one discovery pass; it is not shared.
type scanner struct {
	entries  []Skill
	problems []Problem
	claims   map[string]claim
}

// listRoot returns the entry names of a root directory in lexical order;
// missing reports a root that does not exist.
func listRoot(r root) (abs string, names []string, missing bool, err error) {
	abs, err = filepath.Abs(r.dir)
	if err != nil {
		return "", nil, false, fmt.Errorf("discover: resolve %s root %s: %w", r.kind, r.dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return abs, nil, true, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("discover: stat %s root: %w", r.kind, err)
	}
	if !fi.IsDir() {
		return "", nil, false, fmt.Errorf("discover: %s root %s is not a directory", r.kind, abs)
	}
	names, err = listDir(abs)
	if err != nil {
		return "", nil, false, fmt.Errorf("discover: list %s root: %w", r.kind, err)
	}
	return abs, names, false, nil
}

// listDir returns the names in dir in lexical order, without dot-names.
func listDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (sc *scanner) scanRoot(r root) error {
	abs, names, missing, err := listRoot(r)
	if err != nil {
		return err
	}
	if missing {
		if r.kind != RootInstalled {
			sc.problem(ProblemMissingRoot, "", abs, fmt.Sprintf("%s root does not exist", r.kind))
		}
		return nil
	}
	r.dir = abs
	for _, name := range names {
		sc.scanChild(r, filepath.Join(abs, name), "")
	}
	return nil
}

// scanChild looks at one directory entry: a collection (only at the top of
// a root), a skill, or nothing.
func (sc *scanner) scanChild(r root, path, collection string) {
	fi, err := os.Stat(path)
	if err != nil {
		sc.unreadable(r, path, err)
		return
	}
	if !fi.IsDir() {
		return
	}
	if collection == "" {
		isCollection, err := hasEntry(path, collectionMarker)
		if err != nil {
			sc.unreadable(r, path, err)
			return
		}
		if isCollection {
			sc.scanCollection(r, path)
			return
		}
	}
	isSkill, err := hasEntry(path, skillDoc)
	if err != nil {
		sc.unreadable(r, path, err)
		return
	}
	if isSkill {
		s := loadSkill(path)
		s.Root, s.RootDir, s.Collection = r.kind, r.dir, collection
		sc.add(r, s)
	}
}

// hasEntry reports whether dir holds name (of any type); an error means
// the directory could not be looked into.
func hasEntry(dir, name string) (bool, error) {
	_, err := os.Lstat(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// scanCollection scans a collection's members, one level down.
func (sc *scanner) scanCollection(r root, dir string) {
	id := sc.collectionID(dir)
	if ok, _ := hasEntry(dir, skillDoc); ok {
		sc.problem(ProblemCollection, id, dir, "collection has its own SKILL.md; ignored (COLLECTION.json takes precedence)")
	}
	names, err := listDir(dir)
	if err != nil {
		sc.problem(ProblemUnreadable, id, dir, fmt.Sprintf("list collection: %v", err))
		return
	}
	for _, name := range names {
		sc.scanChild(r, filepath.Join(dir, name), id)
	}
}

// collectionID reads COLLECTION.json's "id", falling back to the directory
// name (and reporting why) when it is unreadable or malformed.
func (sc *scanner) collectionID(dir string) string {
	fallback := filepath.Base(dir)
	data, err := ReadFile(dir, collectionMarker)
	if err != nil {
		sc.problem(ProblemCollection, fallback, dir, err.Error())
		return fallback
	}
	var decl struct {
		ID any `json:"id"`
	}
	if err := json.Unmarshal(data, &decl); err != nil {
		sc.problem(ProblemCollection, fallback, dir, fmt.Sprintf("parse %s: %v; members scanned anyway", collectionMarker, err))
		return fallback
	}
	if id, ok := decl.ID.(string); ok && strings.TrimSpace(id) != "" {
		return strings.TrimSpace(id)
	}
	return fallback
}

// unreadable reports a directory that could not be looked into and lets it
// keep its directory-name identity (see Discover).
func (sc *scanner) unreadable(r root, path string, err error) {
	sc.problem(ProblemUnreadable, filepath.Base(path), path, err.Error())
	id := Identity(filepath.Base(path))
	if _, taken := sc.claims[id]; !taken {
		sc.claims[id] = claim{tier: r.tier, entry: -1, kind: r.kind, path: path}
	}
}

// identities are the canonical forms of a skill's directory name and id.
func identities(s Skill) []string {
	dir, id := Identity(filepath.Base(s.Dir)), Identity(s.ID)
	if dir == id {
		return []string{dir}
	}
	return []string{dir, id}
}

// add applies the identity rules of Discover and appends s.
func (sc *scanner) add(r root, s Skill) {
	ids := identities(s)
	for _, id := range ids {
		if c, ok := sc.claims[id]; ok && c.tier < r.tier {
			sc.problem(ProblemShadowed, s.ID, s.Dir,
				fmt.Sprintf("identity %q is held by the %s skill at %s; not loaded", id, c.kind, c.path))
			return
		}
	}
	idx := len(sc.entries)
	sc.entries = append(sc.entries, s)
	reported := map[string]bool{}
	for _, id := range ids {
		c, ok := sc.claims[id]
		switch {
		case !ok:
			sc.claims[id] = claim{tier: r.tier, entry: idx, kind: r.kind, path: s.Dir}
		case c.entry != idx && !reported[c.path]:
			reported[c.path] = true
			sc.duplicate(id, c, idx)
		}
	}
}

// duplicate marks both holders of a same-tier identity invalid.
func (sc *scanner) duplicate(id string, first claim, idx int) {
	s := &sc.entries[idx]
	*s = s.invalid(fmt.Sprintf("duplicate identity %q: also %s", id, first.path))
	if first.entry >= 0 {
		prev := &sc.entries[first.entry]
		*prev = prev.invalid(fmt.Sprintf("duplicate identity %q: also %s", id, s.Dir))
	}
	sc.problem(ProblemDuplicate, s.ID, s.Dir,
		fmt.Sprintf("identity %q is also held by %s in the same %s tier; both invalid", id, first.path, first.kind))
}

func (sc *scanner) problem(kind ProblemKind, id, path, detail string) {
	sc.problems = append(sc.problems, Problem{Kind: kind, ID: id, Path: path, Detail: detail})
}
