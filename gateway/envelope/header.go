package envelope

import (
	"encoding/json"
	"strings"
)

// Header is what a message says about itself that a policy decides on: its
// type and the skill it claims to come from (context.skill_id).
type Header struct {
	Type       string
	SkillID    string
	HasSkillID bool // context.skill_id is present and not null
}

// The keys a policy reads. Consumers read them case-sensitively, and a
// duplicate key means the last one to JSON decoders in Go (a map) and Python
// (json.loads), while Go's struct decoding matches keys case-insensitively.
// So an envelope that spells one of them twice, or in another case, can be
// read differently by different readers: such an envelope is refused
// (ErrAmbiguous), by Decode and ReadHeader alike.
var (
	topKeys     = []string{"type", "data", "context"}
	contextKeys = []string{"skill_id"}
)

// ReadHeader reads the type and context.skill_id of an envelope exactly as
// Decode does, without decoding the rest: one pass over the bytes after
// json.Valid, so a broker can check who a message claims to be at the rate
// messages arrive. It refuses what Decode refuses about those fields (not
// JSON, not an object, a missing or bad type, data or context not objects)
// and every ambiguous spelling of the keys (ErrAmbiguous); context.skill_id,
// when present, must be a string or null. Numbers and depth are not checked
// here: Decode checks them, and the broker caps depth on its own.
func ReadHeader(b []byte) (Header, error) {
	if !json.Valid(b) {
		return Header{}, decodeErr(ErrNotJSON, "", "not one valid JSON value")
	}
	var h Header
	sc := keyScanner{b: b}
	if err := sc.run(func(f field) error { return h.take(b, f) }); err != nil {
		return Header{}, err
	}
	if h.Type == "" {
		return Header{}, decodeErr(ErrMissingType, "type", "no \"type\" key")
	}
	if err := ValidTopicLevel(h.Type); err != nil {
		return Header{}, &DecodeError{Kind: ErrBadType, Field: "type", Err: err}
	}
	return h, nil
}

// take records the value of a known key.
func (h *Header) take(b []byte, f field) error {
	switch {
	case f.context && f.key == "skill_id":
		if b[f.value] == 'n' { // null reads as absent
			return nil
		}
		s, ok := jsonString(b, f)
		if !ok {
			return decodeErr(ErrBadContext, "context", "skill_id is not a string")
		}
		h.SkillID, h.HasSkillID = s, true
	case f.key == "type":
		if b[f.value] == 'n' {
			return nil
		}
		s, ok := jsonString(b, f)
		if !ok {
			return decodeErr(ErrBadType, "type", "not a string")
		}
		h.Type = s
	case f.key == "data" && !f.object && b[f.value] != 'n':
		return decodeErr(ErrBadData, "data", "not an object")
	case f.key == "context" && !f.object && b[f.value] != 'n':
		return decodeErr(ErrBadContext, "context", "not an object")
	}
	return nil
}

// jsonString decodes the string value of f.
func jsonString(b []byte, f field) (string, bool) {
	if b[f.value] != '"' {
		return "", false
	}
	raw := b[f.value:f.end]
	if !containsByte(raw, '\\') {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// field is one known key found by keyScanner and where its value is.
type field struct {
	key     string // the known key, as spelled canonically
	context bool   // a key of the top-level "context" object
	object  bool   // the value is an object
	value   int    // offset of the value's first byte
	end     int    // offset just past a string value (strings only)
}

// keyScanner walks valid JSON once, finds the keys of the top-level object and
// of its "context" object, and reports the known ones (topKeys,
// contextKeys). It refuses a top level that is not an object and every
// ambiguous spelling of a known key. Strings are skipped byte by byte;
// nothing is allocated unless a key holds an escape.
type keyScanner struct {
	b []byte
	i int
}

func (s *keyScanner) run(found func(field) error) error {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return decodeErr(ErrNotObject, "", "the message is not a JSON object")
	}
	return s.object(topKeys, false, found)
}

// object scans the object starting at s.i, checking its keys against known.
// In the top level (context == false) it descends into "context".
func (s *keyScanner) object(known []string, context bool, found func(field) error) error {
	s.i++ // '{'
	var seen [4]bool
	for {
		s.skipSpace()
		if s.b[s.i] == '}' {
			s.i++
			return nil
		}
		if s.b[s.i] == ',' {
			s.i++
			s.skipSpace()
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		s.skipSpace()
		s.i++ // ':'
		s.skipSpace()
		idx, err := match(key, known, context)
		if err != nil {
			return err
		}
		if idx < 0 {
			s.skipValue()
			continue
		}
		if seen[idx] {
			return ambiguous(known[idx], context, "appears twice")
		}
		seen[idx] = true
		f := field{key: known[idx], context: context, value: s.i, object: s.b[s.i] == '{'}
		if f.object && !context && f.key == "context" {
			if err := found(f); err != nil {
				return err
			}
			if err := s.object(contextKeys, true, found); err != nil {
				return err
			}
			continue
		}
		s.skipValue()
		f.end = s.i
		if err := found(f); err != nil {
			return err
		}
	}
}

// match returns the index of key in known, -1 for an unknown key, or
// ErrAmbiguous for a case variant of a known key.
func match(key string, known []string, context bool) (int, error) {
	for i, k := range known {
		if key == k {
			return i, nil
		}
		if strings.EqualFold(key, k) {
			return -1, ambiguous(k, context, "is also spelled "+quoteKey(key))
		}
	}
	return -1, nil
}

func quoteKey(k string) string {
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	b, _ := json.Marshal(k)
	return string(b)
}

func ambiguous(key string, context bool, why string) error {
	where := key
	if context {
		where = "context." + key
	}
	return decodeErr(ErrAmbiguous, where, "key "+where+" "+why+"; readers could take different values")
}

// key reads the string at s.i as a key.
func (s *keyScanner) key() (string, error) {
	start := s.i
	s.skipString()
	raw := s.b[start:s.i]
	if !containsByte(raw, '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", &DecodeError{Kind: ErrNotJSON, Err: err}
	}
	return k, nil
}

func (s *keyScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// skipString moves past the string starting at s.i.
func (s *keyScanner) skipString() {
	s.i++ // opening quote
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
}

// skipValue moves past the value starting at s.i (valid JSON).
func (s *keyScanner) skipValue() {
	depth := 0
	for {
		switch c := s.b[s.i]; c {
		case '"':
			s.skipString()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return
			}
		case ',':
			if depth == 0 {
				return
			}
		}
		s.i++
		if depth == 0 && s.i < len(s.b) && isDelim(s.b[s.i]) {
			return // end of a number or literal
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
