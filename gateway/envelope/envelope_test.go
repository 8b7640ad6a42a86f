package envelope_test

import (
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// decode is a test helper for messages written as JSON.
func decode(t testing.TB, raw string) envelope.Message {
	t.Helper()
	m, err := envelope.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("Decode(%s): %v", raw, err)
	}
	return m
}

// encode is a test helper returning the canonical JSON as a string.
func encode(t testing.TB, m envelope.Message) string {
	t.Helper()
	b, err := envelope.Encode(m)
	if err != nil {
		t.Fatalf("Encode(%#v): %v", m, err)
	}
	return string(b)
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		name      string
		context   string
		source    string
		dest      []string
		sessionID string
		utterance string
		session   bool
	}{
		{"empty", `{}`, "", nil, "", "", false},
		{"strings", `{"source":"sat-7","destination":"hub"}`, "sat-7", []string{"hub"}, "", "", false},
		{"array destination", `{"destination":["a","","b"]}`, "", []string{"a", "b"}, "", "", false},
		{"non-string elements ignored", `{"destination":[1,"a",null,{"x":"y"},"b"]}`, "", []string{"a", "b"}, "", "", false},
		{"empty string is absent", `{"source":"","destination":""}`, "", nil, "", "", false},
		{"empty array is absent", `{"destination":[]}`, "", nil, "", "", false},
		{"non-string routing", `{"source":7,"destination":{"a":"b"}}`, "", nil, "", "", false},
		{"session", `{"session":{"session_id":"abc"},"utterance_id":"u-1"}`, "", nil, "abc", "u-1", true},
		{"session not object", `{"session":"abc"}`, "", nil, "", "", false},
		{"session without id", `{"session":{"lang":"en-US"}}`, "", nil, "", "", true},
		{"utterance_id not string", `{"utterance_id":5}`, "", nil, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decode(t, `{"type":"x","context":`+tt.context+`}`)
			if got := m.Source(); got != tt.source {
				t.Errorf("Source() = %q, want %q", got, tt.source)
			}
			if got := m.Destination(); !reflect.DeepEqual(got, tt.dest) {
				t.Errorf("Destination() = %q, want %q", got, tt.dest)
			}
			if got := m.SessionID(); got != tt.sessionID {
				t.Errorf("SessionID() = %q, want %q", got, tt.sessionID)
			}
			if got := m.UtteranceID(); got != tt.utterance {
				t.Errorf("UtteranceID() = %q, want %q", got, tt.utterance)
			}
			if got := m.Session() != nil; got != tt.session {
				t.Errorf("Session() != nil is %v, want %v", got, tt.session)
			}
		})
	}
}

func TestDestinationGoSlice(t *testing.T) {
	m := envelope.New("x", nil).WithContext(envelope.KeyDestination, []string{"", "a"})
	if got, want := m.Destination(), []string{"a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Destination() = %q, want %q", got, want)
	}
}

func TestWithContextCopies(t *testing.T) {
	m := decode(t, `{"type":"x","context":{"session":{"session_id":"abc"},"source":"a"}}`)
	n := m.WithContext(envelope.KeySource, "b")
	n.Session()["session_id"] = "changed"
	if got, want := encode(t, m), `{"type":"x","data":{},"context":{"session":{"session_id":"abc"},"source":"a"}}`; got != want {
		t.Errorf("original changed:\n got %s\nwant %s", got, want)
	}
	if got := n.Source(); got != "b" {
		t.Errorf("Source() = %q, want b", got)
	}
	if got := m.WithoutContext(envelope.KeySource).Source(); got != "" {
		t.Errorf("WithoutContext: Source() = %q, want empty", got)
	}
	if m.Source() != "a" {
		t.Errorf("WithoutContext modified the original")
	}
}

func TestClone(t *testing.T) {
	m := decode(t, `{"type":"x","data":{"a":[{"b":1}]},"context":{"session":{"s":[1]}}}`)
	c := m.Clone()
	c.Data["a"].([]any)[0].(map[string]any)["b"] = 2
	c.Session()["s"].([]any)[0] = 2
	if got, want := encode(t, m), `{"type":"x","data":{"a":[{"b":1}]},"context":{"session":{"s":[1]}}}`; got != want {
		t.Errorf("Clone aliases the original:\n got %s\nwant %s", got, want)
	}
}
