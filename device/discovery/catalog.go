package discovery

import "fmt"

// ProblemKind classifies a Problem.
type ProblemKind string

// The problems discovery reports instead of failing. SKILL_MANAGER §1.
const (
	ProblemDuplicate   ProblemKind = "duplicate"    // two skills of one tier share an identity; both invalid
	ProblemShadowed    ProblemKind = "shadowed"     // a later root's skill collides with an earlier one; not loaded
	ProblemUnreadable  ProblemKind = "unreadable"   // a directory under a root could not be looked into
	ProblemCollection  ProblemKind = "collection"   // a COLLECTION.json that is unreadable or malformed, or a collection with its own SKILL.md
	ProblemMissingRoot ProblemKind = "missing-root" // a configured bundled or user root does not exist
)

// Problem is something discovery noticed and worked around.
type Problem struct {
	Kind   ProblemKind
	ID     string // the skill or collection id concerned, "" for a root
	Path   string // the directory concerned
	Detail string
}

func (p Problem) String() string {
	if p.ID == "" {
		return fmt.Sprintf("%s: %s: %s", p.Kind, p.Path, p.Detail)
	}
	return fmt.Sprintf("%s: %s (%s): %s", p.Kind, p.ID, p.Path, p.Detail)
}

// Catalog is the result of one discovery pass. It is immutable: every
// method returns copies, so a Catalog may be shared by any number of
// goroutines (see Store). The zero value and a nil *Catalog are empty.
type Catalog struct {
	entries  []Skill
	problems []Problem
	byID     map[string]int // first entry per exact id
	digest   string
}

func newCatalog(entries []Skill, problems []Problem) *Catalog {
	c := &Catalog{entries: entries, problems: problems, byID: make(map[string]int, len(entries))}
	for i, s := range entries {
		if _, dup := c.byID[s.ID]; !dup {
			c.byID[s.ID] = i
		}
	}
	c.digest = digestOf(manifestEntries(entries))
	return c
}

// Entries returns every listed skill, valid or not, in discovery order
// (root order, then lexical directory order). Shadowed skills are not
// listed; they are in Problems.
func (c *Catalog) Entries() []Skill {
	if c == nil {
		return nil
	}
	out := make([]Skill, len(c.entries))
	for i, s := range c.entries {
		out[i] = s.clone()
	}
	return out
}

// Loadable returns the valid skills in discovery order: the "discoverable"
// set of SKILL_MANAGER §6.
func (c *Catalog) Loadable() []Skill {
	var out []Skill
	for _, s := range c.Entries() {
		if s.Valid {
			out = append(out, s)
		}
	}
	return out
}

// Get returns the first entry whose ID is exactly id, valid or not.
func (c *Catalog) Get(id string) (Skill, bool) {
	if c == nil {
		return Skill{}, false
	}
	i, ok := c.byID[id]
	if !ok {
		return Skill{}, false
	}
	return c.entries[i].clone(), true
}

// Problems returns what discovery reported, in the order it was found.
func (c *Catalog) Problems() []Problem {
	if c == nil {
		return nil
	}
	return append([]Problem(nil), c.problems...)
}

func (s Skill) clone() Skill {
	s.Requirements = append([]string{}, s.Requirements...)
	return s
}
