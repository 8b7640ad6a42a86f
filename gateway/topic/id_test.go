package topic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		ok       bool
		deviceOK bool
		reason   string
	}{
		{"simple", "kitchen", true, true, ""},
		{"skill style", "hello.chorus", true, true, ""},
		{"all classes", "Pi-4_b.2", true, true, ""},
		{"digit first", "7sat", true, true, ""},
		{"underscore first", "_x", true, true, ""},
		{"ends with dot", "a.", true, true, ""},
		{"max length", strings.Repeat("a", 64), true, true, ""},
		{"reserved", "gateway", true, false, "reserved for the gateway"},
		{"reserved other case", "Gateway", true, true, ""},
		{"empty", "", false, false, "empty"},
		{"too long", strings.Repeat("a", 65), false, false, "longer than 64"},
		{"dot", ".", false, false, "must not start with"},
		{"dot dot", "..", false, false, "must not start with"},
		{"leading dot", ".hidden", false, false, "must not start with"},
		{"leading dash", "-rf", false, false, "must not start with"},
		{"slash", "a/b", false, false, "only letters"},
		{"plus", "+", false, false, "only letters"},
		{"hash", "#", false, false, "only letters"},
		{"space", "a b", false, false, "only letters"},
		{"colon", "a:b", false, false, "only letters"},
		{"non-ASCII", "kü", false, false, "only letters"},
		{"NUL", "a\x00", false, false, "only letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := topic.ValidID(tt.id)
			if (err == nil) != tt.ok {
				t.Errorf("ValidID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			derr := topic.ValidDeviceID(tt.id)
			if (derr == nil) != tt.deviceOK {
				t.Fatalf("ValidDeviceID(%q) = %v, want ok=%v", tt.id, derr, tt.deviceOK)
			}
			if derr == nil {
				return
			}
			var ie *topic.IDError
			if !errors.As(derr, &ie) || !errors.Is(derr, topic.ErrInvalidID) {
				t.Fatalf("ValidDeviceID(%q) = %T, want *IDError matching ErrInvalidID", tt.id, derr)
			}
			if msg := derr.Error(); !strings.HasPrefix(msg, "device id ") || !strings.Contains(msg, tt.reason) {
				t.Errorf("error %q, want prefix %q and %q", msg, "device id ", tt.reason)
			}
		})
	}
}

// TestValidLevelAgreesWithEnvelope: the topic tree and the envelope apply the
// same rule to a message type as one topic level (BUS.md §1).
func TestValidLevelAgreesWithEnvelope(t *testing.T) {
	for _, level := range []string{"", "x", "a/b", "a+", "#", "a\x00", "\xff", "recognizer_loop:utterance", "a b", "$SYS", "é", "a..b"} {
		got, want := topic.ValidLevel(level) == nil, envelope.ValidTopicLevel(level) == nil
		if got != want {
			t.Errorf("ValidLevel(%q) ok=%v, envelope.ValidTopicLevel ok=%v", level, got, want)
		}
		if err := topic.ValidLevel(level); err != nil && !errors.Is(err, topic.ErrInvalidLevel) {
			t.Errorf("ValidLevel(%q) = %v, want ErrInvalidLevel", level, err)
		}
	}
}

// DeviceIDFrom makes any host name a valid device id, and keeps the
// gateway's reserved id out.
func TestDeviceIDFrom(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"valid", "pi-kitchen", "pi-kitchen"},
		{"spaces and symbols", "Pi Kitchen (2)!", "Pi-Kitchen-2"},
		{"leading dots and dashes", "..-pi.", "pi"},
		{"non-ASCII", "küche", "k-che"},
		{"empty", "", "local"},
		{"only symbols", "!!!", "local"},
		{"reserved", "gateway", "local"},
		{"too long", strings.Repeat("a", 70), strings.Repeat("a", topic.MaxIDLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := topic.DeviceIDFrom(tc.in)
			if got != tc.want {
				t.Errorf("DeviceIDFrom(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if err := topic.ValidDeviceID(got); err != nil {
				t.Errorf("DeviceIDFrom(%q) = %q, refused: %v", tc.in, got, err)
			}
		})
	}
}
