package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/envelope/envelopetest"
)

func TestDecodeFixtures(t *testing.T) {
	fixtures := envelopetest.Fixtures(t)
	if len(fixtures) < 30 {
		t.Fatalf("got %d fixtures, want at least 30", len(fixtures))
	}
	for _, f := range fixtures {
		t.Run(f.Name, func(t *testing.T) {
			m, err := envelope.Decode(f.Raw)
			if !f.OK() {
				checkDecodeError(t, err, f.WantErr())
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q): %v", f.Raw, err)
			}
			got, err := envelope.Encode(m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(got) != f.Want {
				t.Errorf("Encode(Decode(raw))\n got %s\nwant %s", got, f.Want)
			}
		})
	}
}

func checkDecodeError(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got error %v, want kind %v", err, kind)
	}
	var de *envelope.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("got %T, want *envelope.DecodeError", err)
	}
	if de.Kind != kind {
		t.Errorf("got Kind %v, want %v", de.Kind, kind)
	}
	if !strings.HasPrefix(err.Error(), "decode message: "+kind.Error()) {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestDecodeNeverNilMaps(t *testing.T) {
	for _, raw := range []string{`{"type":"x"}`, `{"type":"x","data":null,"context":null}`} {
		m, err := envelope.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("Decode(%s): %v", raw, err)
		}
		if m.Data == nil || m.Context == nil {
			t.Errorf("Decode(%s) = %#v, want non-nil maps", raw, m)
		}
	}
}

func TestDecodeErrorDetail(t *testing.T) {
	tests := []struct {
		name, raw string
		field     string
		contains  string
	}{
		{"data kind named", `{"type":"x","data":[1]}`, "data", "got an array, want an object"},
		{"context kind named", `{"type":"x","context":7}`, "context", "got a number"},
		{"type kind named", `{"type":true}`, "type", "got a boolean, want a string"},
		{"bad level says why", `{"type":"a/b"}`, "type", "cannot be part of one MQTT topic level"},
		{"nul named", `{"type":"a\u0000"}`, "type", "NUL"},
		{"overflow names number", `{"type":"x","data":{"n":1e400}}`, "data", "1e400 overflows float64"},
		{"depth names limit", strings.Repeat("[", 70), "", "more than 64 levels"},
		{"trailing names offset", `{"type":"x"}  ]`, "", "after the object at offset 12"},
		{"top level kind named", `[]`, "", "got an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envelope.Decode([]byte(tt.raw))
			var de *envelope.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want *DecodeError", err)
			}
			if de.Field != tt.field {
				t.Errorf("Field = %q, want %q", de.Field, tt.field)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestDecodeBadTypeIsTypeError(t *testing.T) {
	_, err := envelope.Decode([]byte(`{"type":"a#b"}`))
	var te *envelope.TypeError
	if !errors.As(err, &te) || te.Type != "a#b" {
		t.Fatalf("got %v, want a *TypeError for %q", err, "a#b")
	}
}
