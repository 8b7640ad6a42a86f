// Package fleet holds the fleet controller's domain: devices and their
// credentials, the skill catalog, assignments and the desired document they
// produce, rollouts with their per-device executions, and the audit log.
//
// The package defines types, rules and service interfaces only; storage lives
// in fleet/sqlite, which imports this package and never the other way round
// (benbjohnson/wtf layout). Every service returns *Error values at its
// boundary, so callers branch on ErrNotFound, ErrConflict and ErrInvalid
// without knowing about SQL.
package fleet

import (
	"encoding/json"
	"strings"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// TargetKind says what a Target names.
type TargetKind string

const (
	TargetDevice TargetKind = "device" // one device by id
	TargetTag    TargetKind = "tag"    // every device carrying the tag, now and later
	TargetAll    TargetKind = "all"    // every device, now and later
)

// Target selects devices for an assignment or a rollout. Value is a device
// id for TargetDevice, a tag for TargetTag and empty for TargetAll.
type Target struct {
	Kind  TargetKind `json:"kind"`
	Value string     `json:"value,omitempty"`
}

// DeviceTarget, TagTarget and AllTarget build targets.
func DeviceTarget(id string) Target { return Target{Kind: TargetDevice, Value: id} }
func TagTarget(tag string) Target   { return Target{Kind: TargetTag, Value: tag} }
func AllTarget() Target             { return Target{Kind: TargetAll} }

// String renders the target as the CLI spells it: "device:ID", "tag:T", "all".
func (t Target) String() string {
	if t.Kind == TargetAll {
		return "all"
	}
	return string(t.Kind) + ":" + t.Value
}

// Validate checks the kind and the value's syntax.
func (t Target) Validate() error {
	switch t.Kind {
	case TargetDevice:
		return ValidDeviceID(t.Value)
	case TargetTag:
		return ValidTag(t.Value)
	case TargetAll:
		if t.Value != "" {
			return Errorf(EINVALID, "target all takes no value (got %q)", t.Value)
		}
		return nil
	}
	return Errorf(EINVALID, "target kind %q: want device, tag or all", t.Kind)
}

// Matches reports whether the target selects a device with this id and tags.
func (t Target) Matches(deviceID string, tags []string) bool {
	switch t.Kind {
	case TargetDevice:
		return t.Value == deviceID
	case TargetTag:
		for _, tag := range tags {
			if tag == t.Value {
				return true
			}
		}
		return false
	case TargetAll:
		return true
	}
	return false
}

// ValidDeviceID checks a device id (ARCHITECTURE.md §3; "gateway" is reserved).
func ValidDeviceID(id string) error { return idError(topic.ValidDeviceID(id)) }

// ValidSkillID checks a skill id (ARCHITECTURE.md §3).
func ValidSkillID(id string) error { return idError(topic.ValidSkillID(id)) }

// ValidTag checks a tag: the same syntax as an id, so a tag is always safe in
// a topic level, a file name or a URL path segment.
func ValidTag(tag string) error {
	if err := topic.ValidID(tag); err != nil {
		return Errorf(EINVALID, "tag%s", strings.TrimPrefix(err.Error(), "id"))
	}
	return nil
}

// ValidName checks an integration or operator name (id syntax).
func ValidName(what, name string) error {
	if err := topic.ValidID(name); err != nil {
		return Errorf(EINVALID, "%s name%s", what, strings.TrimPrefix(err.Error(), "id"))
	}
	return nil
}

// MaxVersionLen is the longest skill version string.
const MaxVersionLen = 64

// ValidVersion checks a skill version: 1 to 64 of [A-Za-z0-9._+-], starting
// with a letter or digit ("1.2.0", "2.0.0-rc.1+build.5").
func ValidVersion(v string) error {
	switch {
	case v == "":
		return Errorf(EINVALID, "version: empty")
	case len(v) > MaxVersionLen:
		return Errorf(EINVALID, "version %q: longer than %d characters", v, MaxVersionLen)
	case !alnum(v[0]):
		return Errorf(EINVALID, "version %q: must start with a letter or digit", v)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !alnum(c) && c != '.' && c != '_' && c != '+' && c != '-' {
			return Errorf(EINVALID, "version %q: only letters, digits, '.', '_', '+' and '-' are allowed", v)
		}
	}
	return nil
}

// ValidSHA256 checks a sha256 digest in lowercase hex (how artifacts are named).
func ValidSHA256(sum string) error {
	if len(sum) != 64 {
		return Errorf(EINVALID, "sha256 %q: want 64 lowercase hex digits", sum)
	}
	for i := 0; i < len(sum); i++ {
		if c := sum[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return Errorf(EINVALID, "sha256 %q: want 64 lowercase hex digits", sum)
		}
	}
	return nil
}

// ValidJSONObject checks that raw is empty or a JSON object of at most max bytes.
func ValidJSONObject(what string, raw json.RawMessage, max int) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > max {
		return Errorf(EINVALID, "%s: %d bytes, more than the limit of %d", what, len(raw), max)
	}
	// What decoding into a map[string]json.RawMessage accepts, checked
	// without building the map and a copy of every value: valid JSON whose
	// first token is '{' (null, an array, a string or a number is not an
	// object). Decoding a skills report that way was 17 MB of a
	// 10,000-device install's allocations (issue 19 round seven).
	if !json.Valid(raw) || firstByte(raw) != '{' {
		return Errorf(EINVALID, "%s: not a JSON object", what)
	}
	return nil
}

// firstByte is raw's first byte after JSON whitespace (RFC 8259 §2), or 0.
func firstByte(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

func idError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: EINVALID, Message: err.Error()}
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func nonEmpty(what, s string) error {
	if s == "" {
		return Errorf(EINVALID, "%s is required", what)
	}
	return nil
}
