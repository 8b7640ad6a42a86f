package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// decoderDepth is the reference for jsonTooDeep: the maximum nesting that
// encoding/json's streaming Decoder.Token sees, and whether b is valid JSON.
func decoderDepth(b []byte) (depth int, valid bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	cur := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return depth, cur == 0 && json.Valid(b)
		}
		if err != nil {
			return depth, false
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			cur++
			depth = max(depth, cur)
		case json.Delim(']'), json.Delim('}'):
			cur--
		}
	}
}

func nested(n int, open, close, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func TestJSONDepth(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		tooDeep bool // with max 64
	}{
		{"empty", "", false},
		{"scalar", `"x"`, false},
		{"flat object", `{"type":"speak","data":{"utterance":"hi"},"context":{}}`, false},
		{"64 arrays", nested(64, "[", "]", ""), false},
		{"65 arrays", nested(65, "[", "]", ""), true},
		{"64 objects", nested(64, `{"a":`, "}", "1"), false},
		{"65 objects", nested(65, `{"a":`, "}", "1"), true},
		{"mixed 65", nested(33, `{"a":[`, "]}", "") + "", true},
		{"brackets inside a string", `{"a":"` + strings.Repeat("[{", 200) + `"}`, false},
		{"escaped quote then brackets", `{"a":"\"` + strings.Repeat("[", 100) + `"}`, false},
		{"escaped backslash ends the string", `["\\",` + nested(64, "[", "]", "") + `]`, true},
		{"wide, not deep", "[" + strings.Repeat("[1],", 10000) + "[1]]", false},
		{"unclosed deep", strings.Repeat("[", 100), true},
		{"not JSON", "ON", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsonTooDeep([]byte(tc.payload), 64); got != tc.tooDeep {
				t.Fatalf("jsonTooDeep = %v, want %v", got, tc.tooDeep)
			}
			if d, valid := decoderDepth([]byte(tc.payload)); valid && (d > 64) != tc.tooDeep {
				t.Fatalf("Decoder.Token depth %d disagrees with want %v", d, tc.tooDeep)
			}
		})
	}
}

// On valid JSON the byte scan and Decoder.Token agree at every limit.
func TestJSONDepthMatchesDecoder(t *testing.T) {
	for _, s := range []string{
		`[]`, `{}`, `[[],[[]]]`, `{"a":{"b":[{"c":"]]]"}]}}`, `"\\"`, `["\"[", [[]]]`,
		nested(70, `[{"k":`, "}]", `"v"`),
	} {
		checkDepthAgrees(t, []byte(s))
	}
}

func FuzzJSONDepth(f *testing.F) {
	for _, s := range []string{`[]`, `{"a":[1,{"b":"\"]"}]}`, nested(65, "[", "]", ""), `"\\\""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDepthAgrees)
}

func checkDepthAgrees(t *testing.T, b []byte) {
	d, valid := decoderDepth(b)
	if !valid {
		return
	}
	for _, limit := range []int{0, 1, 2, d - 1, d, d + 1, 64} {
		if limit < 0 {
			continue
		}
		if got, want := jsonTooDeep(b, limit), d > limit; got != want {
			t.Fatalf("%q: jsonTooDeep(max %d) = %v, Decoder.Token depth %d", b, limit, got, d)
		}
	}
}

// BenchmarkJSONDepth compares the byte scan with Decoder.Token on a payload of
// many small tokens, the worst case for the decoder.
func BenchmarkJSONDepth(b *testing.B) {
	payload := []byte("[" + strings.Repeat("0,", 500000) + "0]") // 1 MB
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			jsonTooDeep(payload, 64)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			decoderDepth(payload)
		}
	})
}

func TestPayloadClassLimits(t *testing.T) {
	c := Config{}
	c.setDefaults()
	tests := []struct {
		role  Role
		topic string
		want  topicClass
	}{
		{RoleDevice, "chorus/v1/pi-1/availability", topicClass{max: 16}},
		{RoleDevice, "chorus/v1/pi-1/birth", topicClass{max: 4 << 10, json: true}},
		{RoleDevice, "chorus/v1/pi-1/connectivity", topicClass{max: 4 << 10, json: true}},
		{RoleDevice, "chorus/v1/pi-1/skills", topicClass{max: 256 << 10, json: true}},
		{RoleDevice, "chorus/v1/pi-1/bus/speak", topicClass{max: 10 << 20, json: true}},
		{RoleOperator, "chorus/v1/pi-1/bus/speak", topicClass{max: 10 << 20, json: true}},
		{RoleSkill, "chorus/v1/pi-1/bus/speak", topicClass{max: 1 << 20, json: true}},
		{RoleIntegration, "chorus/v1/pi-1/skill/hello.chorus/set", topicClass{max: 8}},
		{RoleIntegration, "chorus/v1/pi-1/skill/hello.chorus/update/set", topicClass{max: 16}},
		{RoleIntegration, "homeassistant/status", topicClass{max: 16}},
		{RoleDevice, "chorus/v1/pi-1/desired", topicClass{}},
		{RoleDevice, "elsewhere", topicClass{}},
	}
	for _, tc := range tests {
		t.Run(string(tc.role)+" "+tc.topic, func(t *testing.T) {
			if got := c.classify(tc.role, tc.topic); got != tc.want {
				t.Fatalf("classify = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		rate  float64
		burst int
		at    []time.Duration // publish times after t0
		want  string          // one letter per publish: a(llowed) or r(efused)
	}{
		{"burst then refuse", 1, 3, []time.Duration{0, 0, 0, 0}, "aaar"},
		{"refills at rate", 10, 1, []time.Duration{0, 0, 100 * time.Millisecond, 150 * time.Millisecond}, "arar"},
		{"refill capped at burst", 100, 2, []time.Duration{0, 0, time.Hour, time.Hour, time.Hour}, "aaaar"},
		{"clock stepping back refills nothing", 1, 1, []time.Duration{time.Hour, 0, 90 * time.Minute}, "ara"},
		{"zero rate never refills", 0, 1, []time.Duration{0, time.Hour}, "ar"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBucket(tc.rate, tc.burst, t0)
			var got strings.Builder
			for _, d := range tc.at {
				if b.allow(t0.Add(d)) {
					got.WriteByte('a')
				} else {
					got.WriteByte('r')
				}
			}
			if got.String() != tc.want {
				t.Fatalf("got %s, want %s", got.String(), tc.want)
			}
			if n := strings.Count(tc.want, "r"); b.refused.Load() != int64(n) {
				t.Fatalf("refused counter %d, want %d", b.refused.Load(), n)
			}
		})
	}
}

// TestSkillsCapIsWhatTheControllerStores: a skills report the broker accepts
// must not be one the controller then refuses to store, or the device's
// state would silently stop updating.
func TestSkillsCapIsWhatTheControllerStores(t *testing.T) {
	if maxSkills != fleet.MaxStatePayload {
		t.Fatalf("broker cap on skills %d, controller cap %d", maxSkills, fleet.MaxStatePayload)
	}
}
