package topic

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxIDLen is the longest device or skill id (ARCHITECTURE.md §3).
const MaxIDLen = 64

// ReservedDevice is the device id that names the gateway itself
// (chorus/v1/gateway/availability); no device may use it.
const ReservedDevice = "gateway"

// maxTopicLen is the longest MQTT topic name or filter: a UTF-8 string with
// a two-byte length prefix [MQTT-1.5.4].
const maxTopicLen = 65535

// ErrInvalidID matches every *IDError; ErrInvalidLevel every refused message
// type level.
var (
	ErrInvalidID    = errors.New("invalid id")
	ErrInvalidLevel = errors.New("invalid topic level")
)

// IDError says why a device or skill id is refused.
type IDError struct {
	What   string // "device id", "skill id" or "id"
	ID     string
	Reason string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.What, e.ID, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidID) true for an *IDError.
func (e *IDError) Is(target error) bool { return target == ErrInvalidID }

// ValidID checks the id syntax of ARCHITECTURE.md §3: 1 to 64 of
// [A-Za-z0-9._-], not starting with '-' or '.' (so never "." or ".."). Ids
// are therefore single topic levels and safe as file names.
func ValidID(id string) error { return validID("id", id) }

// ValidSkillID is ValidID with "skill id" in the error.
func ValidSkillID(id string) error { return validID("skill id", id) }

// ValidDeviceID is ValidID that also refuses the reserved id "gateway".
func ValidDeviceID(id string) error {
	if err := validID("device id", id); err != nil {
		return err
	}
	if id == ReservedDevice {
		return &IDError{What: "device id", ID: id, Reason: "reserved for the gateway"}
	}
	return nil
}

// notIDBytes are the runs DeviceIDFrom replaces.
var notIDBytes = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// DeviceIDFrom turns any name (a host name, for `chorus up`'s local
// device) into an id ValidDeviceID accepts: each run of other characters
// becomes '-', leading and trailing '-' and '.' go, and it is cut to
// MaxIDLen; an empty or reserved result is "local".
func DeviceIDFrom(name string) string {
	id := strings.Trim(notIDBytes.ReplaceAllString(name, "-"), "-.")
	if len(id) > MaxIDLen {
		id = id[:MaxIDLen]
	}
	if id == "" || id == ReservedDevice {
		id = "local"
	}
	return id
}

func validID(what, id string) error {
	switch {
	case id == "":
		return &IDError{What: what, ID: id, Reason: "empty"}
	case len(id) > MaxIDLen:
		return &IDError{What: what, ID: id, Reason: fmt.Sprintf("longer than %d characters", MaxIDLen)}
	case id[0] == '-' || id[0] == '.':
		return &IDError{What: what, ID: id, Reason: "must not start with '-' or '.'"}
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return &IDError{What: what, ID: id, Reason: "only letters, digits, '.', '_' and '-' are allowed"}
		}
	}
	return nil
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// ValidLevel checks that a message type can be one topic level (BUS.md §1,
// §2): non-empty UTF-8 without '/', '+', '#' or NUL. It is the same rule as
// envelope.ValidTopicLevel, restated here so the topic tree does not depend
// on the envelope.
func ValidLevel(level string) error {
	if level == "" {
		return fmt.Errorf("message type %q: empty: %w", level, ErrInvalidLevel)
	}
	if i := strings.IndexAny(level, "/+#\x00"); i >= 0 {
		return fmt.Errorf("message type %q: contains %q, which cannot be part of one MQTT topic level: %w", level, level[i], ErrInvalidLevel)
	}
	if !utf8.ValidString(level) {
		return fmt.Errorf("message type %q: not valid UTF-8: %w", level, ErrInvalidLevel)
	}
	return nil
}
