package desired

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// wire is the ARCHITECTURE.md §3 example with a real-looking digest.
const wire = `{"version":12,"skills":{"hello.chorus":{"version":"1.0.0","sha256":"` + sha +
	`","size":20480,"url":"/v1/artifacts/` + sha + `","settings":{"units":"metric"}}}}`

func TestParseExample(t *testing.T) {
	got, err := Parse([]byte(wire))
	if err != nil {
		t.Fatal(err)
	}
	want := Doc{Version: 12, Skills: map[string]Skill{"hello.chorus": {
		Version: "1.0.0", SHA256: sha, Size: 20480, URL: ArtifactURL(sha),
		Settings: map[string]any{"units": "metric"},
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse:\n got %+v\nwant %+v", got, want)
	}
	b, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != wire {
		t.Fatalf("Encode:\n got %s\nwant %s", b, wire)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"empty set", `{"version":0,"skills":{}}`},
		{"unknown fields ignored", `{"version":1,"skills":{},"extra":[1,2]}`},
		{"absolute https url", skillDoc(`"url":"https://mirror.example/a.tar.gz"`)},
		{"absolute http url with port", skillDoc(`"url":"http://10.0.0.2:8080/v1/artifacts/` + sha + `"`)},
		{"null settings", skillDoc(`"settings":null`)},
		{"nested settings", skillDoc(`"settings":{"a":{"b":[1,2.5,"x"]},"big":12345678901234567890}`)},
		{"trailing space", `{"version":1,"skills":{}}` + " \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			b, err := Encode(d)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			d2, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse(Encode): %v", err)
			}
			if !reflect.DeepEqual(d, d2) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", d2, d)
			}
		})
	}
}

func TestSettingsKeepDigits(t *testing.T) {
	d, err := Parse([]byte(skillDoc(`"settings":{"big":12345678901234567890}`)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Encode(d)
	if !strings.Contains(string(b), `"big":12345678901234567890`) {
		t.Fatalf("settings digits lost: %s", b)
	}
}

// skillDoc is a valid one-skill document with the given fields overriding
// the defaults (later duplicate keys win in encoding/json).
func skillDoc(fields string) string {
	s := `"version":"1.0.0","sha256":"` + sha + `","size":10,"url":"/v1/artifacts/` + sha + `"`
	if fields != "" {
		s += "," + fields
	}
	return `{"version":3,"skills":{"hello":{` + s + `}}}`
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, doc, field string
	}{
		{"not json", `{`, "decode"},
		{"trailing data", `{"version":1,"skills":{}} {}`, "decode"},
		{"array", `[]`, "decode"},
		{"missing version", `{"skills":{}}`, "version: missing"},
		{"quoted version", `{"version":"1","skills":{}}`, "version:"},
		{"fractional version", `{"version":1.5,"skills":{}}`, "version:"},
		{"negative version", `{"version":-1,"skills":{}}`, "version:"},
		{"huge version", `{"version":99999999999999999999,"skills":{}}`, "version:"},
		{"missing skills", `{"version":1}`, "skills: missing"},
		{"null skills", `{"version":1,"skills":null}`, "skills: missing"},
		{"skills array", `{"version":1,"skills":[]}`, "skills:"},
		{"bad id", `{"version":1,"skills":{"../x":{}}}`, "skill id"},
		{"dot id", `{"version":1,"skills":{".hidden":{}}}`, "skill id"},
		{"null skill", `{"version":1,"skills":{"a":null}}`, `skills["a"].version`},
		{"case duplicate", `{"version":1,"skills":{"Hello":` + body() + `,"hello":` + body() + `}}`, "differ only in case"},
		{"empty version", skillDoc(`"version":""`), `skills["hello"].version`},
		{"version with space", skillDoc(`"version":"1 0"`), `skills["hello"].version`},
		{"missing sha", `{"version":1,"skills":{"hello":{"version":"1","size":1,"url":"/x"}}}`, `skills["hello"].sha256: missing`},
		{"uppercase sha", skillDoc(`"sha256":"` + strings.ToUpper(sha) + `"`), `skills["hello"].sha256`},
		{"short sha", skillDoc(`"sha256":"abc"`), `skills["hello"].sha256`},
		{"zero size", skillDoc(`"size":0`), `skills["hello"].size`},
		{"quoted size", skillDoc(`"size":"10"`), `skills["hello"].size`},
		{"oversize", skillDoc(`"size":1099511627776`), `skills["hello"].size`},
		{"empty url", skillDoc(`"url":""`), `skills["hello"].url`},
		{"relative other path", skillDoc(`"url":"/etc/passwd"`), `skills["hello"].url`},
		{"relative other sha", skillDoc(`"url":"/v1/artifacts/` + strings.Repeat("f", 64) + `"`), `skills["hello"].url`},
		{"relative no slash", skillDoc(`"url":"v1/artifacts/` + sha + `"`), `skills["hello"].url`},
		{"file scheme", skillDoc(`"url":"file:///etc/passwd"`), `skills["hello"].url`},
		{"credentials in url", skillDoc(`"url":"https://u:p@h/x"`), `skills["hello"].url`},
		{"no host", skillDoc(`"url":"https:///x"`), `skills["hello"].url`},
		{"settings array", skillDoc(`"settings":[1]`), `skills["hello"].settings`},
		{"too big", `{"version":1,"skills":{},"pad":"` + strings.Repeat("x", MaxDocBytes) + `"}`, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("Parse: no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %q", err, tt.field)
			}
		})
	}
}

func body() string {
	return `{"version":"1","sha256":"` + sha + `","size":1,"url":"/v1/artifacts/` + sha + `"}`
}

func TestEncodeRefusesInvalid(t *testing.T) {
	_, err := Encode(Doc{Version: 1, Skills: map[string]Skill{"x": {Version: "1", SHA256: "nope", Size: 1, URL: "/"}}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `skills["x"].sha256`) {
		t.Fatalf("Encode: got %v", err)
	}
}

func TestEncodeNilSkills(t *testing.T) {
	b, err := Encode(Doc{Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"version":2,"skills":{}}` {
		t.Fatalf("got %s", b)
	}
	if _, err := Parse(b); err != nil {
		t.Fatalf("Parse(Encode(zero)): %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{wire, `{"version":0,"skills":{}}`, skillDoc(`"settings":{"a":[1,{"b":null}]}`), `{"version":1e3}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		enc, err := Encode(d)
		if err != nil {
			t.Fatalf("Encode of a parsed document: %v", err)
		}
		d2, err := Parse(enc)
		if err != nil {
			t.Fatalf("Parse(Encode(d)): %v\n%s", err, enc)
		}
		enc2, _ := Encode(d2)
		if string(enc) != string(enc2) {
			t.Fatalf("encoding not stable:\n%s\n%s", enc, enc2)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode wrote invalid JSON: %s", enc)
		}
	})
}
