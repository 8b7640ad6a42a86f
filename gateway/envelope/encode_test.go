package envelope_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		msg  envelope.Message
		want string
	}{
		{"nil maps", envelope.Message{Type: "x"}, `{"type":"x","data":{},"context":{}}`},
		{"New", envelope.New("x", nil), `{"type":"x","data":{},"context":{}}`},
		{"Go values", envelope.Message{Type: "x", Data: map[string]any{"f": 1.5, "i": 3, "s": []string{"a"}, "b": true}},
			`{"type":"x","data":{"b":true,"f":1.5,"i":3,"s":["a"]},"context":{}}`},
		{"sorted nested keys", envelope.Message{Type: "x", Context: map[string]any{"z": map[string]any{"b": 1, "a": 2}, "a": nil}},
			`{"type":"x","data":{},"context":{"a":null,"z":{"a":2,"b":1}}}`},
		{"no HTML escaping", envelope.Message{Type: "x", Data: map[string]any{"s": "<&>"}}, `{"type":"x","data":{"s":"<&>"},"context":{}}`},
		{"legacy type", envelope.Message{Type: "recognizer_loop:utterance"}, `{"type":"recognizer_loop:utterance","data":{},"context":{}}`},
		{"type escaped", envelope.Message{Type: `a"b`}, `{"type":"a\"b","data":{},"context":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := encode(t, tt.msg); got != tt.want {
				t.Errorf("Encode\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	deep := map[string]any{}
	for i, cur := 0, deep; i < envelope.MaxDepth; i++ {
		next := map[string]any{}
		cur["n"] = next
		cur = next
	}
	tests := []struct {
		name     string
		msg      envelope.Message
		contains string
		is       error
	}{
		{"empty type", envelope.Message{}, "empty", envelope.ErrBadType},
		{"slash type", envelope.Message{Type: "a/b"}, "'/'", envelope.ErrBadType},
		{"NaN", envelope.Message{Type: "x", Data: map[string]any{"n": math.NaN()}}, "data", nil},
		{"Inf in context", envelope.Message{Type: "x", Context: map[string]any{"n": []any{math.Inf(-1)}}}, "context", nil},
		{"overflowing json.Number", envelope.Message{Type: "x", Data: map[string]any{"n": json.Number("1e400")}}, "overflows", nil},
		{"invalid json.Number", envelope.Message{Type: "x", Data: map[string]any{"n": json.Number("abc")}}, "data", nil},
		{"unencodable", envelope.Message{Type: "x", Data: map[string]any{"c": make(chan int)}}, "data", nil},
		{"too deep", envelope.Message{Type: "x", Data: deep}, "more than 64 levels", envelope.ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := envelope.Encode(tt.msg)
			if err == nil {
				t.Fatalf("Encode = %s, want an error", b)
			}
			if !strings.HasPrefix(err.Error(), "encode message") || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q, want prefix %q and %q", err, "encode message", tt.contains)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want errors.Is %v", err, tt.is)
			}
		})
	}
}

// TestEncodeDecodeStable checks the guarantee of Encode on every accepted
// fixture and on derived messages: decode∘encode is a fixed point.
func TestEncodeDecodeStable(t *testing.T) {
	m := decode(t, `{"type":"a","data":{"n":1.0e+2,"s":"\u2028<"},"context":{"source":"x"}}`)
	for _, msg := range []envelope.Message{m, m.Forward("b", nil), m.Reply("c", m.Data)} {
		once := encode(t, msg)
		twice := encode(t, decode(t, once))
		if once != twice {
			t.Errorf("not stable:\n once %s\ntwice %s", once, twice)
		}
	}
}
