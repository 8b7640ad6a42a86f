package envelope_test

import (
	"errors"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/envelope/envelopetest"
)

// agree fails t unless ReadHeader reads raw as Decode does: whenever Decode
// accepts, ReadHeader accepts with the same type and skill_id; whenever
// Decode refuses for a header reason, so does ReadHeader.
func agree(t *testing.T, raw []byte) {
	t.Helper()
	h, herr := envelope.ReadHeader(raw)
	m, derr := envelope.Decode(raw)
	if derr != nil {
		for _, k := range []error{envelope.ErrNotObject, envelope.ErrMissingType, envelope.ErrBadType,
			envelope.ErrBadData, envelope.ErrAmbiguous} {
			if errors.Is(derr, k) && herr == nil {
				t.Fatalf("Decode(%q) = %v, ReadHeader accepted it: %+v", raw, derr, h)
			}
		}
		return
	}
	if herr != nil {
		t.Fatalf("Decode(%q) accepted, ReadHeader: %v", raw, herr)
	}
	if h.Type != m.Type {
		t.Fatalf("%q: ReadHeader type %q, Decode type %q", raw, h.Type, m.Type)
	}
	id, has := m.Context["skill_id"].(string)
	if has != h.HasSkillID || id != h.SkillID {
		t.Fatalf("%q: ReadHeader skill_id %q (%v), Decode %q (%v)", raw, h.SkillID, h.HasSkillID, id, has)
	}
}

func TestReadHeaderAgreesWithDecodeOnFixtures(t *testing.T) {
	for _, fx := range envelopetest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) { agree(t, fx.Raw) })
	}
}

func TestReadHeader(t *testing.T) {
	tests := []struct {
		name, raw string
		want      envelope.Header
		err       error
	}{
		{"plain", `{"type":"speak","data":{"utterance":"hi"},"context":{"skill_id":"hello.chorus"}}`,
			envelope.Header{Type: "speak", SkillID: "hello.chorus", HasSkillID: true}, nil},
		{"no context", `{"type":"speak"}`, envelope.Header{Type: "speak"}, nil},
		{"null skill_id is absent", `{"type":"speak","context":{"skill_id":null}}`, envelope.Header{Type: "speak"}, nil},
		{"escaped values", `{"type":"sp\u0065ak","context":{"skill_id":"a\"b"}}`,
			envelope.Header{Type: "speak", SkillID: `a"b`, HasSkillID: true}, nil},
		{"skill_id nested deeper is not the sender", `{"type":"t","data":{"context":{"skill_id":"x"}},"context":{"session":{"skill_id":"y"}}}`,
			envelope.Header{Type: "t"}, nil},
		{"key order free", `{"context":{"x":[1,{"skill_id":2}],"skill_id":"s"},"data":{},"type":"t"}`,
			envelope.Header{Type: "t", SkillID: "s", HasSkillID: true}, nil},
		{"forged through a case variant", `{"type":"t","context":{"skill_id":"hello.chorus","SKILL_ID":"evil.skill"}}`, envelope.Header{}, envelope.ErrAmbiguous},
		{"second context", `{"type":"t","context":{"skill_id":"a"},"Context":{"skill_id":"b"}}`, envelope.Header{}, envelope.ErrAmbiguous},
		{"context of another type", `{"type":"t","context":{"skill_id":"a"},"CONTEXT":5}`, envelope.Header{}, envelope.ErrAmbiguous},
		{"unicode fold of skill_id", `{"type":"t","context":{"ſkill_id":"a"}}`, envelope.Header{}, envelope.ErrAmbiguous},
		{"skill_id not a string", `{"type":"t","context":{"skill_id":5}}`, envelope.Header{}, envelope.ErrBadContext},
		{"context not an object", `{"type":"t","context":"x"}`, envelope.Header{}, envelope.ErrBadContext},
		{"type not a string", `{"type":5}`, envelope.Header{}, envelope.ErrBadType},
		{"type with a slash", `{"type":"a/b"}`, envelope.Header{}, envelope.ErrBadType},
		{"no type", `{"data":{}}`, envelope.Header{}, envelope.ErrMissingType},
		{"array", `[1]`, envelope.Header{}, envelope.ErrNotObject},
		{"not JSON", `{"type":"t"`, envelope.Header{}, envelope.ErrNotJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := envelope.ReadHeader([]byte(tc.raw))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ReadHeader(%s) = %+v, %v; want %v", tc.raw, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ReadHeader(%s) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
			}
			agree(t, []byte(tc.raw))
		})
	}
}

// FuzzReadHeader: ReadHeader never panics and reads every envelope Decode
// accepts exactly as Decode does.
func FuzzReadHeader(f *testing.F) {
	for _, fx := range envelopetest.Fixtures(f) {
		f.Add(fx.Raw)
	}
	f.Add([]byte(`{"type":"t","context":{"skill_id":"a","x":{"skill_id":"b"}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) { agree(t, raw) })
}

func BenchmarkReadHeader(b *testing.B) {
	raw := []byte(`{"type":"speak","data":{"utterance":"the weather today is sunny with a high of twenty degrees","expect_response":false,"meta":{"skill":"weather.chorus"}},"context":{"source":"skills","destination":["audio"],"skill_id":"weather.chorus","session":{"session_id":"default","lang":"en-us","active_skills":[["weather.chorus",1700000000]]}}}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := envelope.ReadHeader(raw); err != nil {
			b.Fatal(err)
		}
	}
}
