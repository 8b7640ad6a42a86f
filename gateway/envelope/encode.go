package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode writes m as canonical JSON: {"type":…,"data":…,"context":…} in that
// order, object keys inside data and context sorted (encoding/json's map
// order), no insignificant whitespace, no HTML escaping, nil maps as {}.
//
// Guarantees: the output is accepted by Decode, and for any Message x
// returned by Decode, Encode(Decode(Encode(x))) equals Encode(x) byte for
// byte (json.Number keeps each number's spelling). Encode refuses, with an
// error naming the field, a type that cannot be one topic level
// (ValidTopicLevel), non-finite floats, numbers that overflow float64,
// values encoding/json cannot encode, and nesting deeper than MaxDepth.
func Encode(m Message) ([]byte, error) {
	if err := ValidTopicLevel(m.Type); err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`{"type":`)
	if err := enc.Encode(m.Type); err != nil {
		return nil, fmt.Errorf("encode message %q: type: %w", m.Type, err)
	}
	if err := encodeObject(&buf, enc, `,"data":`, m.Data); err != nil {
		return nil, fmt.Errorf("encode message %q: data: %w", m.Type, err)
	}
	if err := encodeObject(&buf, enc, `,"context":`, m.Context); err != nil {
		return nil, fmt.Errorf("encode message %q: context: %w", m.Type, err)
	}
	buf.WriteByte('}')
	out := buf.Bytes()
	if err := checkDepth(out); err != nil {
		return nil, fmt.Errorf("encode message %q: %w", m.Type, err)
	}
	return out, nil
}

// encodeObject appends sep and obj ({} when nil). json.Encoder ends each
// value with a newline; it is trimmed so the output is compact.
func encodeObject(buf *bytes.Buffer, enc *json.Encoder, sep string, obj map[string]any) error {
	trimNewline(buf)
	buf.WriteString(sep)
	if obj == nil {
		buf.WriteString("{}")
		return nil
	}
	if err := checkNumbers(obj); err != nil {
		return err
	}
	if err := enc.Encode(obj); err != nil {
		return err
	}
	trimNewline(buf)
	return nil
}

func trimNewline(buf *bytes.Buffer) {
	if n := buf.Len(); n > 0 && buf.Bytes()[n-1] == '\n' {
		buf.Truncate(n - 1)
	}
}
