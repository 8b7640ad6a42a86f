// Package desired is the desired document of ARCHITECTURE.md §3: what the
// controller wants one device to have installed, published retained on
// chorus/v1/<device>/desired and reconciled by the agent's installer.
//
// The controller (fleet/) writes it with Encode and the agent (device/)
// reads it with Parse; both validate with the same rules, so a document the
// controller can publish is one the agent accepts, and a corrupted or hostile
// one is refused as a whole (ARCHITECTURE.md §6: nothing that fails
// validation changes state).
package desired

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Caps on what Parse accepts.
const (
	// MaxDocBytes caps an encoded document, settings included.
	MaxDocBytes = 4 << 20
	// MaxArtifactSize caps a skill artifact's size (the compressed archive).
	MaxArtifactSize = 256 << 20
	// MaxVersionLen caps a skill version string.
	MaxVersionLen = 128
	// MaxURLLen caps an artifact URL.
	MaxURLLen = 2048
)

// ArtifactPrefix is the gateway path that serves artifacts by sha256.
const ArtifactPrefix = "/v1/artifacts/"

// ErrInvalid matches every error from Parse, Encode and Validate.
var ErrInvalid = errors.New("invalid desired document")

// Doc is one device's desired state. Version increases with every change
// the controller makes; the agent reports the last version it applied.
type Doc struct {
	Version int64            `json:"version"`
	Skills  map[string]Skill `json:"skills"`
}

// Skill pins one skill artifact by content: the agent installs exactly the
// archive whose sha256 and size are given here, wherever URL points.
type Skill struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	URL     string `json:"url"`
	// Settings, when present, is written by the agent to the skill's
	// settings.json. Parse keeps its numbers as json.Number, so they are
	// written back digit for digit.
	Settings map[string]any `json:"settings,omitempty"`
}

// ArtifactURL is the relative URL of the artifact with the given sha256 on
// the gateway (GET /v1/artifacts/<sha256>).
func ArtifactURL(sha256 string) string { return ArtifactPrefix + sha256 }

// Parse decodes and validates a desired document. Unknown fields are
// ignored (ARCHITECTURE.md §3); missing required fields, wrong types,
// trailing data and anything Validate refuses are errors that name the
// field, and all match ErrInvalid.
func Parse(b []byte) (Doc, error) {
	if len(b) > MaxDocBytes {
		return Doc{}, invalid("document is %d bytes, over the %d-byte limit", len(b), MaxDocBytes)
	}
	d, err := decodeWire(b)
	if err != nil {
		return Doc{}, err
	}
	if err := d.Validate(); err != nil {
		return Doc{}, err
	}
	return d, nil
}

// Encode validates d and returns its canonical JSON (keys sorted, no
// insignificant space), so the same Doc always encodes to the same bytes.
func Encode(d Doc) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if d.Skills == nil {
		d.Skills = map[string]Skill{} // "skills" is required: never null
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, invalid("encode: %v", err)
	}
	if len(b) > MaxDocBytes {
		return nil, invalid("document is %d bytes, over the %d-byte limit", len(b), MaxDocBytes)
	}
	return b, nil
}

// IDs returns the desired skill ids in sorted order.
func (d Doc) IDs() []string { return slices.Sorted(maps.Keys(d.Skills)) }

// Validate checks every field of d; the error names the first bad field
// (skills in id order) and matches ErrInvalid.
func (d Doc) Validate() error {
	if d.Version < 0 {
		return invalid("version: %d is negative", d.Version)
	}
	lower := make(map[string]string, len(d.Skills))
	for _, id := range d.IDs() {
		if err := validID(id); err != nil {
			return invalid("skills: %v", err)
		}
		// Skill identity is case-insensitive on the device (SKILL_MANAGER §1):
		// two such ids would make both skills invalid there.
		if other, dup := lower[strings.ToLower(id)]; dup {
			return invalid("skills: ids %q and %q differ only in case", other, id)
		}
		lower[strings.ToLower(id)] = id
		if err := d.Skills[id].validate(); err != nil {
			return invalid("skills[%q].%v", id, err)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
