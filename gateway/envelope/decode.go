package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of JSON objects and arrays Decode accepts,
// counting the envelope object itself as 1. It bounds the work and stack a
// hostile frame can cost; real OVOS messages (with a session) stay under 10.
const MaxDepth = 64

// Decode parses and validates one envelope (MSG-1 §2, §6; BUS.md §1):
//   - b is UTF-8 JSON holding exactly one object (whitespace may follow it);
//   - "type" is a non-empty string that can be one MQTT topic level
//     (ValidTopicLevel); absent, null or "" is ErrMissingType;
//   - "data" and "context" are objects; absent or null reads as {};
//   - unknown top-level keys are ignored (MSG-1 §2);
//   - every number is finite as a float64 (MSG-1 §6); numbers are kept as
//     json.Number so big integers and their spelling survive a round trip;
//   - nesting is at most MaxDepth;
//   - "type", "data", "context" and context's "skill_id" appear at most once
//     and in exactly that case (ErrAmbiguous; header.go says why).
//
// Any other input yields a *DecodeError whose Kind is one of the Err* kinds.
// The returned Message never has nil Data or Context.
func Decode(b []byte) (Message, error) {
	obj, err := parseObject(b)
	if err != nil {
		return Message{}, err
	}
	if err := checkKeys(b); err != nil {
		return Message{}, err
	}
	t, err := typeField(obj)
	if err != nil {
		return Message{}, err
	}
	data, err := objectField(obj, "data", ErrBadData)
	if err != nil {
		return Message{}, err
	}
	ctx, err := objectField(obj, "context", ErrBadContext)
	if err != nil {
		return Message{}, err
	}
	return Message{Type: t, Data: data, Context: ctx}, nil
}

// parseObject checks encoding, depth, syntax and numbers and returns the
// top-level object.
func parseObject(b []byte) (map[string]any, error) {
	if !utf8.Valid(b) {
		return nil, decodeErr(ErrNotUTF8, "", "invalid UTF-8 byte sequence")
	}
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	v, err := parseJSON(b)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, decodeErr(ErrNotObject, "", "got "+jsonKind(v))
	}
	for k, val := range obj {
		if err := checkNumbers(val); err != nil {
			return nil, decodeErr(ErrBadNumber, k, err.Error())
		}
	}
	return obj, nil
}

func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, decodeErr(ErrNotJSON, "", "empty input")
		}
		return nil, &DecodeError{Kind: ErrNotJSON, Err: err}
	}
	if rest := b[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, decodeErr(ErrNotJSON, "", fmt.Sprintf("unexpected data after the object at offset %d", dec.InputOffset()))
	}
	return v, nil
}

// checkDepth scans b once and refuses nesting deeper than MaxDepth before the
// JSON decoder recurses into it. Brackets inside strings do not count.
func checkDepth(b []byte) error {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxDepth {
				return decodeErr(ErrTooDeep, "", fmt.Sprintf("more than %d levels at offset %d", MaxDepth, i))
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// checkNumbers walks a decoded value and refuses a number that overflows
// float64 (e.g. 1e400): JSON cannot spell NaN or Inf, but such a literal
// becomes Inf in every float64 reader, which MSG-1 §6 forbids.
func checkNumbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		// The decoder has checked the syntax; an underflow (1e-400) reads
		// as 0 and is finite, so only an infinite result is refused.
		if f, _ := strconv.ParseFloat(string(v), 64); math.IsInf(f, 0) {
			return fmt.Errorf("%.40s overflows float64", v)
		}
	case map[string]any:
		for _, e := range v {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func typeField(obj map[string]any) (string, error) {
	raw, ok := obj["type"]
	if !ok || raw == nil {
		return "", decodeErr(ErrMissingType, "type", "no \"type\" key")
	}
	t, ok := raw.(string)
	if !ok {
		return "", decodeErr(ErrBadType, "type", "got "+jsonKind(raw)+", want a string")
	}
	if t == "" {
		return "", decodeErr(ErrMissingType, "type", "empty string")
	}
	if err := ValidTopicLevel(t); err != nil {
		return "", &DecodeError{Kind: ErrBadType, Field: "type", Err: err}
	}
	return t, nil
}

// objectField reads data or context: absent or null is {} (MSG-1 §2).
func objectField(obj map[string]any, key string, kind error) (map[string]any, error) {
	raw, ok := obj[key]
	if !ok || raw == nil {
		return map[string]any{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, decodeErr(kind, key, "got "+jsonKind(raw)+", want an object")
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// checkKeys refuses ambiguous spellings of the known keys in b, which
// parseObject has found to be one valid JSON object.
func checkKeys(b []byte) error {
	sc := keyScanner{b: b}
	return sc.run(func(field) error { return nil })
}
