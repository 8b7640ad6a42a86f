// Package state defines the retained state payloads a device agent
// publishes (docs/topics.md: chorus/v1/<device>/birth, /connectivity and
// /skills) once, for the agent that writes them and for every reader (the
// controller, its metrics, the bridge relay, the external-broker export and
// the benchmarks), with their size limits and one parser each.
//
// Parsers accept what the agent writes and any later agent that only adds
// fields (unknown keys are ignored), and refuse what no agent writes: a
// payload over its limit, anything but a JSON object, a negative version, a
// session out of the store's range. A refused payload is ErrInvalid with the
// reason.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Size limits of the payloads: the broker refuses a larger publish on the
// topic (broker/limits.go), and the parsers refuse a larger payload.
const (
	MaxBirth        = 4 << 10
	MaxConnectivity = 4 << 10
	MaxSkills       = 256 << 10 // a device's whole skill table

	MaxOutputLines = 5   // output lines a failed skill's report keeps (the whole table fits MaxSkills)
	MaxOutputLine  = 160 // bytes of each, cut at a rune boundary
)

// ErrInvalid is wrapped by every parse error.
var ErrInvalid = errors.New("invalid state payload")

// Birth is the payload of chorus/v1/<device>/birth, retained once per agent
// start.
type Birth struct {
	// Session numbers the agent's starts; availability messages carry it so
	// that a late Will of an earlier session is recognised (docs/topics.md).
	Session      uint64 `json:"session"`
	AgentVersion string `json:"agent_version"`
	StartedAt    string `json:"started_at"`
	Hostname     string `json:"hostname"`
	Arch         string `json:"arch"`
	Websocket    string `json:"websocket"` // the OVOS drop-in's address; "" when off
	// Isolation says how skills are kept from the agent: "uid" (each under
	// its own uid) or "none" (as the agent's user; docs/security.md).
	Isolation string `json:"isolation"`
}

// Connectivity is the payload of chorus/v1/<device>/connectivity.
type Connectivity struct {
	Network   bool      `json:"network"`
	Internet  bool      `json:"internet"`
	GUI       bool      `json:"gui"`
	ChangedAt time.Time `json:"changed_at"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason,omitempty"` // why internet is false after the startup check
}

// Skills is the payload of chorus/v1/<device>/skills. AppliedVersion is the
// desired document the installer last applied.
type Skills struct {
	AppliedVersion int64     `json:"applied_version"`
	ManifestDigest string    `json:"manifest_digest"`
	UpdatedAt      time.Time `json:"updated_at"`
	Skills         []Skill   `json:"skills"`
	Training       Training  `json:"training"`
}

// Skill is one skill of the skills payload (SKILL_MANAGER §3).
type Skill struct {
	ID           string     `json:"id"`
	Version      string     `json:"version"`
	State        SkillState `json:"state"`
	Active       bool       `json:"active"`
	WaitingFor   []string   `json:"waiting_for"`
	Degraded     bool       `json:"degraded"`
	Requirements []string   `json:"requirements"`
	Managed      bool       `json:"managed"`
	Error        string     `json:"error"`
	Output       []string   `json:"output,omitempty"` // a failed skill's last output lines (at most MaxOutputLines of MaxOutputLine bytes)
	Attempts     int        `json:"attempts"`
	NextRetry    *time.Time `json:"next_retry"`
	Since        time.Time  `json:"since"`
}

// Training is the intent training status of the skills payload.
type Training struct {
	Status      string     `json:"status"` // "", "pending", "trained", "failed", "timeout"
	Error       string     `json:"error,omitempty"`
	RequestedAt *time.Time `json:"requested_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
}

// SkillState is a skill's state in the skills payload.
type SkillState string

// The skill states (SKILL_MANAGER §3).
const (
	Waiting     SkillState = "waiting"     // requirements unmet (waiting_for says which), or not yet passed over
	Loading     SkillState = "loading"     // started, not ready yet
	Loaded      SkillState = "loaded"      // running and ready (active)
	Inactive    SkillState = "inactive"    // deactivated (skillmanager.deactivate), persisted
	Failed      SkillState = "failed"      // last load failed; error, attempts, next_retry
	Blacklisted SkillState = "blacklisted" // in skills.blacklisted_skills and not running
	Invalid     SkillState = "invalid"     // a SKILL.md directory that cannot load
)

// SkillStates lists every state, in the order above.
var SkillStates = []SkillState{Waiting, Loading, Loaded, Inactive, Failed, Blacklisted, Invalid}

// Skill returns the skill with id, if the payload lists it.
func (s Skills) Skill(id string) (Skill, bool) {
	for _, k := range s.Skills {
		if k.ID == id {
			return k, true
		}
	}
	return Skill{}, false
}

// ParseBirth reads a birth payload.
func ParseBirth(b []byte) (Birth, error) {
	var v Birth
	if err := decode("birth", b, MaxBirth, &v); err != nil {
		return Birth{}, err
	}
	if v.Session > math.MaxInt64 {
		return Birth{}, fmt.Errorf("%w: birth: session %d out of range", ErrInvalid, v.Session)
	}
	return v, nil
}

// ParseConnectivity reads a connectivity payload.
func ParseConnectivity(b []byte) (Connectivity, error) {
	var v Connectivity
	if err := decode("connectivity", b, MaxConnectivity, &v); err != nil {
		return Connectivity{}, err
	}
	return v, nil
}

// ParseSkills reads a skills payload; an empty one (a cleared retained
// topic) is the empty report.
func ParseSkills(b []byte) (Skills, error) { return ParseSkillsInto(b, nil) }

// ParseSkillsInto is ParseSkills decoding the skill table into buf's
// memory when buf has room for it: the result's Skills then share buf, whose
// contents are overwritten, so a caller that parses report after report
// (the fleet controller's inbox and reconciler) allocates no table for
// each. The result is the one ParseSkills gives, whatever buf held: buf is
// cleared before the decode, since encoding/json decodes into a slice's
// existing elements without zeroing them first.
func ParseSkillsInto(b []byte, buf []Skill) (Skills, error) {
	var v Skills
	if len(b) == 0 {
		return v, nil
	}
	// The skill table is sized before it is decoded: encoding/json grows a
	// slice by doubling from one element (15 Skill values allocated for a
	// table of 6), which was a tenth of the bytes the gateway allocated in a
	// 5,000-device install (docs/benchmarks.md, issue 19 round five). The
	// size is only a hint, so a wrong guess costs a growth or unused slots,
	// never another result.
	if n := skillsHint(b); n > 0 {
		v.Skills = tableFor(buf, n)
	}
	if err := decode("skills report", b, MaxSkills, &v); err != nil {
		return Skills{}, err
	}
	if len(v.Skills) == 0 && cap(v.Skills) > 0 {
		// No "skills" key left the hinted slice untouched: nil, as without
		// the hint ("skills": [] decodes to a new empty slice, null to nil).
		v.Skills = nil
	}
	if v.AppliedVersion < 0 {
		return Skills{}, fmt.Errorf("%w: skills report: applied_version %d is negative", ErrInvalid, v.AppliedVersion)
	}
	return v, nil
}

// tableFor is an empty skill table with room for n skills: buf's memory,
// cleared, when it has the room, else new memory.
func tableFor(buf []Skill, n int) []Skill {
	if cap(buf) < n {
		return make([]Skill, 0, n)
	}
	clear(buf[:cap(buf)])
	return buf[:0]
}

// maxSkillsHint bounds skillsHint, so a payload crafted with many "id"
// strings cannot make the parser allocate more than a few KiB up front.
const maxSkillsHint = 64

// skillsHint guesses how many skills a skills payload lists: the number of
// "id" strings in it (one per skill object), at most maxSkillsHint.
func skillsHint(b []byte) int {
	return min(bytes.Count(b, []byte(`"id"`)), maxSkillsHint)
}

// Encode marshals a payload and checks it against its limit, so that an
// agent never publishes what the broker would refuse.
func Encode[T Birth | Connectivity | Skills](v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	what, max := limitOf(any(v))
	if len(b) > max {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the limit of %d", ErrInvalid, what, len(b), max)
	}
	return b, nil
}

func limitOf(v any) (string, int) {
	switch v.(type) {
	case Birth:
		return "birth", MaxBirth
	case Connectivity:
		return "connectivity", MaxConnectivity
	default:
		return "skills report", MaxSkills
	}
}

// decode checks size and shape, then decodes: the first byte tells an object
// (null, an array or a string would decode into nothing without error).
func decode(what string, b []byte, max int, v any) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s: empty payload", ErrInvalid, what)
	}
	if len(b) > max {
		return fmt.Errorf("%w: %s: %d bytes, more than the limit of %d", ErrInvalid, what, len(b), max)
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: %s: not a JSON object", ErrInvalid, what)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
	}
	return nil
}
