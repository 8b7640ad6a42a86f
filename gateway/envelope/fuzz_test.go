package envelope_test

import (
	"bytes"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/envelope/envelopetest"
)

// FuzzDecode: Decode never panics; an accepted input encodes, the encoding
// decodes, and decode∘encode is then a fixed point (Encode's guarantee).
func FuzzDecode(f *testing.F) {
	for _, fx := range envelopetest.Fixtures(f) {
		f.Add(fx.Raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := envelope.Decode(raw)
		if err != nil {
			return
		}
		once, err := envelope.Encode(m)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)): %v", raw, err)
		}
		m2, err := envelope.Decode(once)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(%q))) = %v; encoding %s", raw, err, once)
		}
		twice, err := envelope.Encode(m2)
		if err != nil {
			t.Fatalf("second Encode: %v", err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("not stable for %q:\n once %s\ntwice %s", raw, once, twice)
		}
		_ = m.Reply("x.y", nil) // derivations must not panic on any accepted context
		_ = m.Forward("x.y", nil)
		_, _ = m.Response(nil)
	})
}
