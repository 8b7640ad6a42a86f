package api

import (
	"encoding/json"

	"github.com/chorus-edge/chorus/fleet"
)

// A skill version crosses the wire as fleet.SkillVersion without its
// manifest, which stays internal (docs/api.md, SkillVersion).

// NewSkillVersion is v as the API shows it: no manifest, requirements []
// rather than null.
func NewSkillVersion(v *fleet.SkillVersion) fleet.SkillVersion {
	out := *v
	out.Manifest = nil
	out.Requirements = nonNil(out.Requirements)
	return out
}

// NewSkillVersions is NewSkillVersion of each, never nil.
func NewSkillVersions(vs []*fleet.SkillVersion) []fleet.SkillVersion {
	out := make([]fleet.SkillVersion, 0, len(vs))
	for _, v := range vs {
		out = append(out, NewSkillVersion(v))
	}
	return out
}

// SkillResponse is POST /v1/skills (201) and GET /v1/skills/resolve.
type SkillResponse struct {
	Skill fleet.SkillVersion `json:"skill"`
}

// SkillsResponse is GET /v1/skills: the latest version of each skill.
type SkillsResponse struct {
	Skills []fleet.SkillVersion `json:"skills"`
}

// SkillDetail is GET /v1/skills/{id}: the latest version and all versions.
type SkillDetail struct {
	Skill    fleet.SkillVersion   `json:"skill"`
	Versions []fleet.SkillVersion `json:"versions"`
}

// SearchResult is one ranked catalog match.
type SearchResult struct {
	Skill fleet.SkillVersion `json:"skill"`
	Score float64            `json:"score"`
}

// SearchResponse is GET /v1/skills/search.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
}

// SkillConfigRequest is PUT /v1/skills/{id}/config.
type SkillConfigRequest struct {
	Target   fleet.Target    `json:"target"`
	Settings json.RawMessage `json:"settings"`
}

// AssignmentResponse is the answer to PUT /v1/skills/{id}/config.
type AssignmentResponse struct {
	Assignment fleet.Assignment `json:"assignment"`
}
