package fleet

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"slices"
	"time"

	"github.com/chorus-edge/chorus/gateway/state"
)

// MaxStatePayload caps the connectivity and skills payloads the controller
// stores for a device (ARCHITECTURE.md §6: every network input has a limit).
const MaxStatePayload = state.MaxSkills

// Device is one satellite in the registry with what the controller last
// learned about it from its retained topics.
type Device struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags"` // sorted, unique

	// Credentials (ARCHITECTURE.md §6). SecretHash is the stored form of the
	// agent's high-entropy secret; SkillKey is the Ed25519 public key that
	// verifies the skill credentials the agent mints, naming KeyVersion.
	SecretHash string `json:"-"`
	SkillKey   []byte `json:"skill_key"`
	KeyVersion int    `json:"key_version"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Presence, from chorus/v1/<id>/availability and birth. BirthSession is
	// the newest session seen; an availability of an older session is stale.
	Online       bool      `json:"online"`
	LastSeen     time.Time `json:"last_seen"`
	BirthSession uint64    `json:"birth_session"`
	AgentVersion string    `json:"agent_version"`

	// Connectivity and Reported are the latest connectivity and skills topic
	// payloads, verbatim (nil until the first one arrives).
	Connectivity json.RawMessage `json:"connectivity,omitempty"`
	Reported     json.RawMessage `json:"reported,omitempty"`

	// AppliedVersion is the desired version the agent last reported applying;
	// DesiredVersion the version of the device's current desired document
	// (0 until one was computed). They differ while a change is under way.
	AppliedVersion int64 `json:"applied_version"`
	DesiredVersion int64 `json:"desired_version"`
}

// HasTag reports whether the device carries tag.
func (d *Device) HasTag(tag string) bool { return slices.Contains(d.Tags, tag) }

// Validate checks what a new device must have: a valid id and tags, a
// secret hash and an Ed25519 public key.
func (d *Device) Validate() error {
	if err := ValidDeviceID(d.ID); err != nil {
		return err
	}
	if err := ValidTags(d.Tags); err != nil {
		return err
	}
	if err := nonEmpty("device secret hash", d.SecretHash); err != nil {
		return err
	}
	return ValidSkillKey(d.SkillKey)
}

// ValidSkillKey checks an Ed25519 public key.
func ValidSkillKey(key []byte) error {
	if len(key) != ed25519.PublicKeySize {
		return Errorf(EINVALID, "skill key: %d bytes, want an Ed25519 public key of %d", len(key), ed25519.PublicKeySize)
	}
	return nil
}

// ValidTags checks every tag.
func ValidTags(tags []string) error {
	for _, t := range tags {
		if err := ValidTag(t); err != nil {
			return err
		}
	}
	return nil
}

// NormalizeTags returns tags sorted and without duplicates.
func NormalizeTags(tags []string) []string {
	out := slices.Clone(tags)
	slices.Sort(out)
	return slices.Compact(out)
}

// DeviceFilter narrows ListDevices. The zero value lists every device.
type DeviceFilter struct {
	Tag    string // only devices carrying this tag
	Online *bool  // only online (true) or offline (false) devices
}

// Presence is one availability message: online or offline, of a session.
type Presence struct {
	Online  bool
	Session uint64    // the MQTT 5 user property "session" of the message
	At      time.Time // when the controller saw it
	// Force applies it even when Session is older than the newest session
	// seen: the controller saw the device's live connection (or its end)
	// itself, so the word is current whatever the device's counter says (a
	// re-imaged device starts again at 1; docs/topics.md, Presence).
	Force bool
}

// Birth is what the controller keeps from a birth payload.
type Birth struct {
	Session      uint64
	AgentVersion string
	At           time.Time
	Force        bool // as Presence.Force
}

// DeviceService is the device registry.
//
// Presence rule (ARCHITECTURE.md §3, Sparkplug bdSeq): UpdatePresence and
// UpdateBirth ignore a message whose session is older than the newest session
// seen, and report applied=false. So a late Will of session 6 arriving after
// the birth of session 7 never marks the device offline. Force overrides the
// rule, for a controller that knows the device's live connection.
type DeviceService interface {
	CreateDevice(ctx context.Context, d *Device) error
	GetDevice(ctx context.Context, id string) (*Device, error)
	ListDevices(ctx context.Context, f DeviceFilter) ([]*Device, error)
	// ListDeviceIDs returns the ids of the devices f selects, ordered, without
	// reading the devices (ListDevices reads every column, reports included).
	ListDeviceIDs(ctx context.Context, f DeviceFilter) ([]string, error)
	DeleteDevice(ctx context.Context, id string) error

	SetDeviceTags(ctx context.Context, id string, tags []string) (*Device, error)
	AddDeviceTag(ctx context.Context, id, tag string) (*Device, error)
	RemoveDeviceTag(ctx context.Context, id, tag string) (*Device, error)
	RotateDevice(ctx context.Context, id, secretHash string, skillKey []byte) (*Device, error)

	UpdatePresence(ctx context.Context, id string, p Presence) (applied bool, err error)
	UpdateBirth(ctx context.Context, id string, b Birth) (applied bool, err error)
	UpdateConnectivity(ctx context.Context, id string, payload json.RawMessage) error
	UpdateReported(ctx context.Context, id string, payload json.RawMessage, appliedVersion int64) error
	// UpdateStates applies updates in one transaction, each as
	// UpdateReported or UpdateConnectivity would, in order. An update of a
	// device that is gone, or that either refuses (EINVALID), is that
	// update's error in the result (ENOTFOUND, EINVALID) and changes
	// nothing; any other error changes nothing at all (the returned error,
	// the result nil).
	UpdateStates(ctx context.Context, updates []StateUpdate) ([]error, error)
}

// StateUpdate is one device state payload of UpdateStates: a skills report
// (Reported, with the desired version it says the agent applied) or a
// connectivity payload (Reported false), stored verbatim.
type StateUpdate struct {
	DeviceID       string
	Reported       bool
	Payload        json.RawMessage
	AppliedVersion int64 // a skills report's applied_version
}
