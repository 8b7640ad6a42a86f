// Package envelopetest holds the shared wire fixtures of the OVOS Message
// (wire.json, embedded) so every package that speaks the bus
// tests against the same valid, legacy and malformed envelopes.
package envelopetest

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Fixture is one wire case.
type Fixture struct {
	Name string
	Raw  []byte // input to envelope.Decode
	Err  string // expected error kind (a key of Kinds), or "" when Decode must succeed
	Want string // canonical envelope.Encode output of the decoded message when Err == ""
	Note string // why the case exists, when not obvious
}

// OK reports whether Decode must accept the fixture.
func (f Fixture) OK() bool { return f.Err == "" }

// WantErr returns the error kind Decode must return (for errors.Is), or nil.
func (f Fixture) WantErr() error { return Kinds[f.Err] }

// Kinds maps the fixture file's error names to envelope's error kinds.
var Kinds = map[string]error{
	"not_utf8":     envelope.ErrNotUTF8,
	"not_json":     envelope.ErrNotJSON,
	"too_deep":     envelope.ErrTooDeep,
	"bad_number":   envelope.ErrBadNumber,
	"not_object":   envelope.ErrNotObject,
	"missing_type": envelope.ErrMissingType,
	"bad_type":     envelope.ErrBadType,
	"bad_data":     envelope.ErrBadData,
	"bad_context":  envelope.ErrBadContext,
	"ambiguous":    envelope.ErrAmbiguous,
}

type fileCase struct {
	Name      string  `json:"name"`
	Raw       *string `json:"raw"`
	RawBase64 string  `json:"raw_base64"`
	Err       string  `json:"err"`
	Want      string  `json:"want"`
	Note      string  `json:"note"`
}

// wire is the fixture file, embedded so that a test binary built anywhere
// (-trimpath included) has it.
//
//go:embed wire.json
var wire []byte

// Fixtures parses wire.json. It fails t on an inconsistent file.
func Fixtures(t testing.TB) []Fixture {
	t.Helper()
	var doc struct {
		Cases []fileCase `json:"cases"`
	}
	if err := json.Unmarshal(wire, &doc); err != nil {
		t.Fatalf("load wire fixtures: %v", err)
	}
	out := make([]Fixture, 0, len(doc.Cases))
	for _, c := range doc.Cases {
		f, err := c.fixture()
		if err != nil {
			t.Fatalf("load wire fixture %q: %v", c.Name, err)
		}
		out = append(out, f)
	}
	return out
}

func (c fileCase) fixture() (Fixture, error) {
	f := Fixture{Name: c.Name, Err: c.Err, Want: c.Want, Note: c.Note}
	switch {
	case c.Raw != nil:
		f.Raw = []byte(*c.Raw)
	default:
		raw, err := base64.StdEncoding.DecodeString(c.RawBase64)
		if err != nil {
			return f, err
		}
		f.Raw = raw
	}
	if c.Err != "" && Kinds[c.Err] == nil {
		return f, fmt.Errorf("unknown err kind %q", c.Err)
	}
	return f, nil
}
