package envelope_test

import (
	"errors"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

const defaultSession = `"session":{"session_id":"default"}`

func TestForward(t *testing.T) {
	tests := []struct {
		name, context, want string
	}{
		{"carries routing and session", `{"source":"sat-7","destination":"hub","session":{"session_id":"s1"},"utterance_id":"u"}`,
			`{"destination":"hub","session":{"session_id":"s1"},"source":"sat-7","utterance_id":"u"}`},
		{"materializes default session", `{"source":"sat-7"}`, `{` + defaultSession + `,"source":"sat-7"}`},
		{"null session materialized", `{"session":null}`, `{` + defaultSession + `}`},
		{"malformed session carried", `{"session":"s1"}`, `{"session":"s1"}`},
		{"drops empty routing", `{"source":"","destination":[],"session":{}}`, `{"session":{}}`},
		{"keeps array destination", `{"destination":["a","b"],"session":{}}`, `{"destination":["a","b"],"session":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decode(t, `{"type":"a","data":{"k":1},"context":`+tt.context+`}`)
			f := m.Forward("b", map[string]any{"v": "w"})
			want := `{"type":"b","data":{"v":"w"},"context":` + tt.want + `}`
			if got := encode(t, f); got != want {
				t.Errorf("Forward\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestReply(t *testing.T) {
	tests := []struct {
		name, context, want string
	}{
		{"swaps both", `{"source":"skills","destination":"sat-7","session":{}}`,
			`{"destination":"skills","session":{},"source":"sat-7"}`},
		// MSG-1 §5.2 (3): a broadcast keeps its source and only writes destination.
		// Shipped Python would leave destination absent.
		{"source only", `{"source":"sat-7","session":{}}`, `{"destination":"sat-7","session":{},"source":"sat-7"}`},
		// MSG-1 §5.2 (1)+(3): destination only: source written, destination left.
		{"destination only", `{"destination":"hub","session":{}}`, `{"destination":"hub","session":{},"source":"hub"}`},
		{"neither", `{"session":{}}`, `{"session":{}}`},
		// MSG-1 §5.2 (1): the first element, not the whole array (Python moves the array).
		{"array destination", `{"source":"skills","destination":["sat-7","hub"],"session":{}}`,
			`{"destination":"skills","session":{},"source":"sat-7"}`},
		{"array skips non-strings", `{"destination":[3,"","sat-7"],"session":{}}`,
			`{"destination":[3,"","sat-7"],"session":{},"source":"sat-7"}`},
		{"empty destination is absent", `{"source":"sat-7","destination":"","session":{}}`,
			`{"destination":"sat-7","session":{},"source":"sat-7"}`},
		{"empty source is absent", `{"source":"","destination":"hub","session":{}}`,
			`{"destination":"hub","session":{},"source":"hub"}`},
		{"other keys kept", `{"source":"a","destination":"b","session":{"session_id":"s","lang":"de"},"utterance_id":"u-1","skill_id":"x"}`,
			`{"destination":"a","session":{"lang":"de","session_id":"s"},"skill_id":"x","source":"b","utterance_id":"u-1"}`},
		{"materializes default session", `{"source":"a"}`, `{"destination":"a",` + defaultSession + `,"source":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decode(t, `{"type":"a","context":`+tt.context+`}`)
			r := m.Reply("b", nil)
			want := `{"type":"b","data":{},"context":` + tt.want + `}`
			if got := encode(t, r); got != want {
				t.Errorf("Reply\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestResponse(t *testing.T) {
	tests := []struct {
		name, typ, want string
		refused         bool
	}{
		{"dotted", "ovos.skills.list", "ovos.skills.list.response", false},
		{"single level", "ping", "ping.response", false},
		{"already response", "ovos.skills.list.response", "", true},
		{"dispatch", "hello.chorus:HelloIntent", "", true},
		{"legacy", "recognizer_loop:utterance", "", true},
		{"response inside", "a.response.b", "a.response.b.response", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decode(t, `{"type":"`+tt.typ+`","context":{"source":"sat-7"}}`)
			r, err := m.Response(map[string]any{"ok": true})
			if tt.refused {
				if !errors.Is(err, envelope.ErrNoResponse) {
					t.Fatalf("Response() error = %v, want ErrNoResponse", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Response(): %v", err)
			}
			if r.Type != tt.want || r.Destination()[0] != "sat-7" || r.Data["ok"] != true {
				t.Errorf("Response() = %#v, want type %q, destination sat-7, data ok", r, tt.want)
			}
		})
	}
}

// TestDerivationsDoNotAlias: mutating a derived message, at any depth, never
// changes its parent (unlike ovos-bus-client's forward).
func TestDerivationsDoNotAlias(t *testing.T) {
	const raw = `{"type":"a","data":{},"context":{"source":"s","destination":["d"],"session":{"active_skills":[["x",1]]},"utterance_id":"u"}}`
	derive := map[string]func(envelope.Message) envelope.Message{
		"forward": func(m envelope.Message) envelope.Message { return m.Forward("b", nil) },
		"reply":   func(m envelope.Message) envelope.Message { return m.Reply("b", nil) },
		"response": func(m envelope.Message) envelope.Message {
			r, _ := m.Response(nil)
			return r
		},
	}
	for name, f := range derive {
		t.Run(name, func(t *testing.T) {
			m := decode(t, raw)
			before := encode(t, m)
			d := f(m)
			d.Session()["active_skills"].([]any)[0].([]any)[0] = "changed"
			d.Context["utterance_id"] = "changed"
			if dst, ok := d.Context["destination"].([]any); ok {
				dst[0] = "changed"
			}
			if after := encode(t, m); after != before {
				t.Errorf("parent changed:\n got %s\nwant %s", after, before)
			}
		})
	}
}

// TestWorkedExample is MSG-1 §5.2's worked example: an utterance from sat-7
// carrying only source; the converse ping reply and every hop after it have
// source sat-7 and destination sat-7. Session and utterance_id ride along.
func TestWorkedExample(t *testing.T) {
	m := decode(t, `{"type":"recognizer_loop:utterance","data":{"utterances":["hi"]},"context":{"source":"sat-7","session":{"session_id":"s-7"},"utterance_id":"u-1"}}`)
	hops := []func(envelope.Message) envelope.Message{
		func(m envelope.Message) envelope.Message { return m.Forward("ovos.utterance.handle", nil) },
		func(m envelope.Message) envelope.Message { return m.Reply("hello.chorus.converse.ping", nil) },
		func(m envelope.Message) envelope.Message { return m.Reply("skill.converse.pong", nil) },
		func(m envelope.Message) envelope.Message { return m.Reply("hello.chorus:HelloIntent", nil) },
		func(m envelope.Message) envelope.Message { return m.Forward("mycroft.skill.handler.start", nil) },
		func(m envelope.Message) envelope.Message {
			return m.Reply("speak", map[string]any{"utterance": "hello"})
		},
		func(m envelope.Message) envelope.Message {
			r, err := m.Response(nil)
			if err != nil {
				t.Fatalf("Response of %q: %v", m.Type, err)
			}
			return r
		},
	}
	for i, hop := range hops {
		m = hop(m)
		if i == 0 {
			continue // forward keeps source only, like the utterance
		}
		if m.Source() != "sat-7" || len(m.Destination()) != 1 || m.Destination()[0] != "sat-7" {
			t.Errorf("hop %d (%s): source %q destination %q, want sat-7 and sat-7", i, m.Type, m.Source(), m.Destination())
		}
		if m.SessionID() != "s-7" || m.UtteranceID() != "u-1" {
			t.Errorf("hop %d (%s): session %q utterance %q, want s-7 and u-1", i, m.Type, m.SessionID(), m.UtteranceID())
		}
	}
}
