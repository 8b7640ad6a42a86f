package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// wireSkill is the JSON shape Parse reads for one skill: pointers and raw
// values tell a missing or null field from a zero one, and numbers are
// checked by hand so a quoted, fractional or out-of-range number is refused,
// not coerced.
type wireSkill struct {
	Version  *string         `json:"version"`
	SHA256   *string         `json:"sha256"`
	Size     json.RawMessage `json:"size"`
	URL      *string         `json:"url"`
	Settings json.RawMessage `json:"settings"`
}

func decodeWire(b []byte) (Doc, error) {
	var top struct {
		Version json.RawMessage `json:"version"`
		Skills  json.RawMessage `json:"skills"`
	}
	if err := strictUnmarshal(b, &top); err != nil {
		return Doc{}, invalid("decode: %v", err)
	}
	v, err := int64Of(top.Version)
	if err != nil {
		return Doc{}, invalid("version: %v", err)
	}
	// An empty desired set uninstalls every managed skill, so it must be
	// said explicitly ({}), never inferred from a missing or null field.
	if isAbsent(top.Skills) {
		return Doc{}, invalid("skills: missing (an empty set is {})")
	}
	var skills map[string]*wireSkill
	if err := strictUnmarshal(top.Skills, &skills); err != nil {
		return Doc{}, invalid("skills: %v", err)
	}
	d := Doc{Version: v, Skills: make(map[string]Skill, len(skills))}
	for _, id := range slices.Sorted(maps.Keys(skills)) {
		if err := validID(id); err != nil {
			return Doc{}, invalid("skills: %v", err)
		}
		s, err := skills[id].skill()
		if err != nil {
			return Doc{}, invalid("skills[%q].%v", id, err)
		}
		d.Skills[id] = s
	}
	return d, nil
}

func (w *wireSkill) skill() (Skill, error) {
	switch {
	case w == nil:
		return Skill{}, errors.New("version: missing (the skill is null)")
	case w.Version == nil:
		return Skill{}, errors.New("version: missing")
	case w.SHA256 == nil:
		return Skill{}, errors.New("sha256: missing")
	case w.URL == nil:
		return Skill{}, errors.New("url: missing")
	}
	size, err := int64Of(w.Size)
	if err != nil {
		return Skill{}, fmt.Errorf("size: %v", err)
	}
	s := Skill{Version: *w.Version, SHA256: *w.SHA256, Size: size, URL: *w.URL}
	if !isAbsent(w.Settings) {
		if err := strictUnmarshal(w.Settings, &s.Settings); err != nil {
			return Skill{}, errors.New("settings: not a JSON object")
		}
	}
	return s, nil
}

// strictUnmarshal is json.Unmarshal that keeps numbers as json.Number (so
// settings survive a round trip digit for digit) and refuses trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// int64Of reads a JSON integer literal: missing, null, quoted, fractional,
// exponent or out-of-range values are refused.
func int64Of(raw json.RawMessage) (int64, error) {
	if isAbsent(raw) {
		return 0, errors.New("missing")
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s is not a whole number in range", raw)
	}
	return v, nil
}
