package discovery

import (
	"fmt"
	"path/filepath"
	"strings"
)

// RootKind says which kind of root a skill was found under.
type RootKind string

// The root kinds, in scan order. SKILL_MANAGER §1.
const (
	RootBundled   RootKind = "bundled"   // read-only, shipped with the agent (--skills)
	RootInstalled RootKind = "installed" // <data-dir>/installed, managed by the installer
	RootUser      RootKind = "user"      // --user-skills
)

// Ready is how a skill tells the manager it can serve. SKILL_MANAGER §1.
type Ready string

const (
	ReadyMessage Ready = "message"  // the skill emits chorus.skill.ready (default)
	ReadyOnStart Ready = "on-start" // ready once the process has started
)

// Runtime is how a skill is run. SKILL.md `runtime:`; docs/ovos.md.
type Runtime string

const (
	RuntimeExec Runtime = "exec" // the skill's own exec target (the default, also written "")
	// RuntimeOVOS is a stock OVOS skill, a Python package with an
	// opm.skills entry point named as the skill's id, run by the
	// satellite's ovos-skill-launcher (skills.ovos.launcher).
	RuntimeOVOS Runtime = "ovos"
)

// The requirements the manager knows how to check; any other word is a
// capability met only when listed in config skills.capabilities.
const (
	RequireNetwork  = "network"
	RequireInternet = "internet"
	RequireGUI      = "gui"
)

// The SKILL.md keys of SKILL_MANAGER §1 and their defaults.
const (
	skillDoc       = "SKILL.md"
	defaultOrigin  = "unknown"
	descriptionMax = 200 // runes, "..." included
)

// Skill is one discovered skill directory, valid or not. A Skill is a value
// taken from an immutable Catalog: treat its slices as read-only.
type Skill struct {
	ID         string   // the skill id: declared name, else the directory name
	Dir        string   // absolute skill directory
	Root       RootKind // the kind of root it was found under
	RootDir    string   // absolute root directory
	Collection string   // the collection id, "" when not in a collection
	Name       string   // the declared frontmatter name, "" when not declared

	Description  string   // collapsed, at most 200 runes
	Version      string   // declared, else 12 hex chars of ExecSHA256, else of DocSHA256
	Exec         string   // absolute exec target, symlinks resolved; "" unless the gate passed
	ExecRel      string   // exec as declared, relative to Dir (one path: blanks are part of the name, not arguments)
	ExecSHA256   string   // hex sha256 of the exec target at discovery; "" unless the gate passed
	DocSHA256    string   // hex sha256 of SKILL.md
	Requirements []string // lowercase, deduplicated, in declared order
	Ready        Ready
	Origin       string // display metadata only
	Runtime      Runtime
	// PythonPackage is the OVOS skill's Python distribution
	// (python_package), "" when not declared; runtime ovos only.
	PythonPackage string

	Valid   bool   // loadable: parsed, valid id, gate passed, no collision
	Invalid string // why not, when !Valid: "no exec", "invalid id ...", ...
}

// IDRule is the skill id syntax (ARCHITECTURE.md §3), as error messages
// state it.
const IDRule = "want 1 to 64 characters of A-Z a-z 0-9 . _ -, not starting with '.' or '-'"

// loadSkill reads dir/SKILL.md and gates the exec target. It never fails:
// whatever is wrong becomes the skill's Invalid reason, checked in this
// order: unreadable or unparseable SKILL.md, invalid id, invalid ready,
// then the exec gate.
func loadSkill(dir string) Skill {
	s := Skill{Dir: dir, ID: filepath.Base(dir), Ready: ReadyMessage, Origin: defaultOrigin}
	data, err := ReadFile(dir, skillDoc)
	if err != nil {
		return s.invalid("unreadable SKILL.md: " + err.Error())
	}
	s.DocSHA256 = hashBytes(data)
	fm, body, err := ParseFrontmatter(string(data))
	if err == nil {
		err = s.applyFrontmatter(fm, body)
	}
	if err != nil {
		s.Version = s.DocSHA256[:12]
		return s.invalid("unparseable SKILL.md: " + err.Error())
	}
	s.gate()
	if s.Version == "" {
		s.Version = orDefault(s.ExecSHA256, s.DocSHA256)[:12]
	}
	return s
}

// applyFrontmatter fills the declared keys and their defaults; the error is
// a key of the wrong shape (a list where one value is expected). Values are
// trimmed; ready is compared case-insensitively; unknown keys are ignored.
func (s *Skill) applyFrontmatter(fm Frontmatter, body string) error {
	var err error
	text := func(key string) string {
		v, e := fm.Text(key)
		if err == nil {
			err = e
		}
		return strings.TrimSpace(v)
	}
	if s.Name = text("name"); s.Name != "" {
		s.ID = s.Name
	}
	s.Description = cutDescription(collapse(orDefault(text("description"), firstParagraph(body))))
	s.Version = text("version")
	s.ExecRel = text("exec")
	s.Ready = Ready(strings.ToLower(orDefault(text("ready"), string(ReadyMessage))))
	s.Origin = orDefault(text("origin"), defaultOrigin)
	s.Requirements = parseRequirements(fm["requirements"])
	s.Runtime = Runtime(strings.ToLower(text("runtime")))
	s.PythonPackage = text("python_package")
	return err
}

// gate marks the skill invalid or runs the exec gate, in the order of
// loadSkill's doc comment.
func (s *Skill) gate() {
	if !validID(s.ID) {
		*s = s.invalid(fmt.Sprintf("invalid id %q: %s (set name: in SKILL.md)", s.ID, IDRule))
		return
	}
	if s.Ready != ReadyMessage && s.Ready != ReadyOnStart {
		*s = s.invalid(fmt.Sprintf("invalid ready %q (want message or on-start)", s.Ready))
		return
	}
	switch s.Runtime {
	case "", RuntimeExec:
	case RuntimeOVOS:
		s.gateOVOS()
		return
	default:
		*s = s.invalid(fmt.Sprintf("invalid runtime %q (want exec or ovos)", s.Runtime))
		return
	}
	g := gateExec(s.Dir, s.ExecRel)
	if g.reason != "" {
		*s = s.invalid(g.reason)
		return
	}
	s.Exec, s.ExecSHA256, s.Valid = g.path, g.sha256, true
}

// gateOVOS checks a runtime ovos skill: the agent runs the launcher, so the
// skill declares no exec, and its readiness is the launcher's own
// mycroft.skills.loaded, so it declares no ready either.
func (s *Skill) gateOVOS() {
	switch {
	case s.ExecRel != "":
		*s = s.invalid("runtime ovos takes no exec (the agent runs skills.ovos.launcher); remove exec")
	case s.Ready != ReadyMessage:
		*s = s.invalid("runtime ovos takes no ready (the skill is loaded when its launcher says mycroft.skills.loaded); remove ready")
	default:
		s.Valid = true
	}
}

func (s Skill) invalid(reason string) Skill {
	s.Valid, s.Invalid = false, reason
	return s
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// collapse joins whitespace runs into single spaces and trims.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutDescription keeps at most descriptionMax runes, ending in "..." when cut.
func cutDescription(s string) string {
	r := []rune(s)
	if len(r) <= descriptionMax {
		return s
	}
	return string(r[:descriptionMax-3]) + "..."
}

// firstParagraph is the default description: the first blank-line separated
// block of the body with its heading lines dropped, else the first
// non-blank line without its leading "#"s. seeds/002: _first_paragraph.
func firstParagraph(body string) string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	for _, block := range strings.Split(body, "\n\n") {
		var kept []string
		for _, ln := range strings.Split(block, "\n") {
			if t := strings.TrimSpace(ln); t != "" && !strings.HasPrefix(t, "#") {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			return strings.Join(kept, " ")
		}
	}
	for _, ln := range strings.Split(body, "\n") {
		if t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(ln), "#")); t != "" {
			return t
		}
	}
	return ""
}

// parseRequirements normalises a requirements value: a YAML list, a comma
// list ("network, gui", brackets tolerated) or one word. Each entry is split
// further on commas and blanks (a requirement is a word), lowercased and
// deduplicated; the declared order is kept. seeds/002: _requirements.
func parseRequirements(v Value) []string {
	parts := v.Items
	if !v.List {
		parts = []string{strings.NewReplacer("[", " ", "]", " ").Replace(v.Text)}
	}
	out := []string{}
	seen := map[string]bool{}
	for _, p := range parts {
		for _, w := range strings.FieldsFunc(p, isRequirementSep) {
			w = strings.ToLower(w)
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

func isRequirementSep(r rune) bool {
	return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
}
