package fleet

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Desired is a device's desired document, published retained on
// chorus/v1/<device>/desired (ARCHITECTURE.md §3):
//
//	{"version": 12, "skills": {"hello.chorus": {"version": "1.0.0",
//	 "sha256": "…", "size": 20480, "url": "/v1/artifacts/<sha256>",
//	 "settings": {"units": "metric"}}}}
type Desired struct {
	Version int64                   `json:"version"`
	Skills  map[string]DesiredSkill `json:"skills"`
}

// DesiredSkill is one skill of a desired document.
type DesiredSkill struct {
	Version  string          `json:"version"`
	SHA256   string          `json:"sha256"`
	Size     int64           `json:"size"`
	URL      string          `json:"url"`
	Settings json.RawMessage `json:"settings,omitempty"`
}

// MarshalJSON writes "skills": {} rather than null for a document without skills.
func (d Desired) MarshalJSON() ([]byte, error) {
	type plain Desired
	if d.Skills == nil {
		d.Skills = map[string]DesiredSkill{}
	}
	return json.Marshal(plain(d))
}

// SameSkills reports whether two documents desire the same content,
// ignoring their versions.
func SameSkills(a, b map[string]DesiredSkill) bool {
	ja, erra := canonicalSkills(a)
	jb, errb := canonicalSkills(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// canonicalSkills encodes skills deterministically: encoding/json sorts map
// keys and compacts raw settings.
func canonicalSkills(s map[string]DesiredSkill) ([]byte, error) {
	if s == nil {
		s = map[string]DesiredSkill{}
	}
	return json.Marshal(s)
}

// VersionResolver finds a published skill version; version "" asks for the
// latest. It reports false when there is none.
type VersionResolver func(skillID, version string) (*SkillVersion, bool)

// ComputeDesired applies the precedence rules documented on Assignment to
// the assignments matching a device with this id and tags. A skill whose
// version cannot be resolved is left out (stores refuse such assignments, so
// this only guards against a catalog changed behind their back).
func ComputeDesired(deviceID string, tags []string, as []*Assignment, resolve VersionResolver) map[string]DesiredSkill {
	bySkill := map[string][]*Assignment{}
	for _, a := range as {
		if a.Target.Matches(deviceID, tags) {
			bySkill[a.SkillID] = append(bySkill[a.SkillID], a)
		}
	}
	out := make(map[string]DesiredSkill, len(bySkill))
	for skill, list := range bySkill {
		slices.SortFunc(list, lessSpecificFirst)
		win := presenceWinner(list)
		if win == nil || win.Action != AssignInstall {
			continue
		}
		v, ok := resolve(skill, win.Version)
		if !ok {
			continue
		}
		out[skill] = DesiredSkill{
			Version:  v.Version,
			SHA256:   v.SHA256,
			Size:     v.Size,
			URL:      ArtifactURL(v.SHA256),
			Settings: mergeSettings(list),
		}
	}
	return out
}

// lessSpecificFirst orders by specificity, then by Seq (older first).
func lessSpecificFirst(a, b *Assignment) int {
	if d := a.Target.specificity() - b.Target.specificity(); d != 0 {
		return d
	}
	switch {
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// presenceWinner returns the last install or uninstall of a list sorted by
// lessSpecificFirst: the most specific, then the newest.
func presenceWinner(sorted []*Assignment) *Assignment {
	for i := len(sorted) - 1; i >= 0; i-- {
		if a := sorted[i]; a.Action == AssignInstall || a.Action == AssignUninstall {
			return a
		}
	}
	return nil
}

// mergeSettings merges the top-level keys of every settings object in a
// sorted list, later ones overriding earlier ones. It returns nil when no
// assignment carries settings.
func mergeSettings(sorted []*Assignment) json.RawMessage {
	var merged map[string]json.RawMessage
	for _, a := range sorted {
		if a.Action == AssignUninstall || len(a.Settings) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(a.Settings, &m) != nil {
			continue // validated on the way in; never fail a whole document
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	if merged == nil {
		return nil
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil
	}
	return b
}
