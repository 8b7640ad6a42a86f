// Package envelopetest holds the shared wire fixtures of the OVOS Message
// (gateway/envelope/testdata/wire.json) so every package that speaks the bus
// tests against the same valid, legacy and malformed envelopes.
package envelopetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// Fixtures loads wire.json, located relative to this source file so it works
// from any package's test binary. It fails t on an unreadable or
// inconsistent file.
func Fixtures(t testing.TB) []Fixture {
	t.Helper()
	b, err := os.ReadFile(Path())
	if err != nil {
		t.Fatalf("load wire fixtures: %v", err)
	}
	var doc struct {
		Cases []fileCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
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

// Path returns the absolute path of wire.json.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "wire.json")
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
