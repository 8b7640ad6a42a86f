package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// MaxManifest caps the stored manifest of a skill version.
const MaxManifest = 256 << 10

// SkillVersion is one published version of a skill: its artifact, pinned by
// sha256, and what the catalog shows about it.
type SkillVersion struct {
	SkillID      string          `json:"skill_id"`
	Version      string          `json:"version"`
	SHA256       string          `json:"sha256"` // lowercase hex of the artifact
	Size         int64           `json:"size"`   // artifact bytes
	Manifest     json.RawMessage `json:"manifest,omitempty"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	Requirements []string        `json:"requirements"`
	PublishedAt  time.Time       `json:"published_at"`
}

// Validate checks ids, digest, size and manifest.
func (v *SkillVersion) Validate() error {
	if err := ValidSkillID(v.SkillID); err != nil {
		return err
	}
	if err := ValidVersion(v.Version); err != nil {
		return err
	}
	if err := ValidSHA256(v.SHA256); err != nil {
		return err
	}
	if v.Size <= 0 {
		return Errorf(EINVALID, "skill %s@%s: artifact size %d: must be positive", v.SkillID, v.Version, v.Size)
	}
	return ValidJSONObject("manifest", v.Manifest, MaxManifest)
}

// ArtifactURL is the artifact's path relative to the gateway's HTTP base URL
// (ARCHITECTURE.md §3 desired.url).
func ArtifactURL(sha256 string) string { return "/v1/artifacts/" + sha256 }

// CatalogService is the skill catalog. "Latest" means most recently
// published (ARCHITECTURE.md §3), not highest by version order.
//
// PublishVersion is idempotent: publishing the same skill, version and
// sha256 again returns the stored version unchanged; the same skill and
// version with another sha256 is ErrConflict (a published version never
// changes, so every device that installed it runs the same bytes).
type CatalogService interface {
	PublishVersion(ctx context.Context, v *SkillVersion) (*SkillVersion, error)
	GetVersion(ctx context.Context, skillID, version string) (*SkillVersion, error)
	LatestVersion(ctx context.Context, skillID string) (*SkillVersion, error)
	ListSkills(ctx context.Context) ([]*SkillVersion, error)
	ListVersions(ctx context.Context, skillID string) ([]*SkillVersion, error)
	ArtifactBySHA256(ctx context.Context, sha256 string) (*SkillVersion, error)
}
