// Package envelope is the OVOS bus Message of MSG-1 ({type, data, context}):
// validation on decode, canonical encoding, routing accessors and the pure
// derivations forward, reply and response (MSG-1 §5).
//
// A Message is a value, but its maps are references: the derivations and
// WithContext deep-copy the context so a derived message never aliases its
// parent's (unlike ovos-bus-client's forward, ovos-behaviour §3.1).
package envelope

// Context keys this package reads or writes (MSG-1 §3, §4).
const (
	KeySource      = "source"
	KeyDestination = "destination"
	KeySession     = "session"
	KeySessionID   = "session_id"
	KeyUtteranceID = "utterance_id"
)

// DefaultSessionID is the id of the session a derivation materializes when
// the context has none (MSG-1 §5.1, SESSION-1).
const DefaultSessionID = "default"

// Message is one OVOS bus message. Decode never returns nil maps; a Message
// built by hand may hold nil maps, which Encode writes as {}. Use Encode and
// Decode rather than encoding/json directly: they apply MSG-1's rules and the
// canonical form; the struct tags only name the keys.
type Message struct {
	Type    string         `json:"type"`
	Data    map[string]any `json:"data"`
	Context map[string]any `json:"context"`
}

// New returns a message of type t with data (nil reads as {}) and an empty
// context. It does not validate t; Encode does.
func New(t string, data map[string]any) Message {
	if data == nil {
		data = map[string]any{}
	}
	return Message{Type: t, Data: data, Context: map[string]any{}}
}

// Source returns context.source, or "" when it is absent, empty or not a
// string (MSG-1 §3: an empty string reads as absent).
func (m Message) Source() string {
	s, _ := m.Context[KeySource].(string)
	return s
}

// Destination returns context.destination as a list: a string is one
// element, an array keeps its non-empty string elements in order and drops
// the rest. Absent, empty or malformed reads as nil, which means broadcast
// (MSG-1 §3).
func (m Message) Destination() []string {
	switch d := m.Context[KeyDestination].(type) {
	case string:
		if d != "" {
			return []string{d}
		}
	case []string:
		return nonEmpty(d)
	case []any:
		var out []string
		for _, e := range d {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Session returns context.session, or nil when it is absent or not an
// object. The map is the message's own, not a copy.
func (m Message) Session() map[string]any {
	s, _ := m.Context[KeySession].(map[string]any)
	return s
}

// SessionID returns context.session.session_id, or "" when absent.
func (m Message) SessionID() string {
	id, _ := m.Session()[KeySessionID].(string)
	return id
}

// UtteranceID returns context.utterance_id, or "" when absent (MSG-1 §4.2).
func (m Message) UtteranceID() string {
	id, _ := m.Context[KeyUtteranceID].(string)
	return id
}

// WithContext returns a copy of m whose context (deep-copied) has key set to
// val. Data is shared with m. m is not modified.
func (m Message) WithContext(key string, val any) Message {
	ctx := copyMap(m.Context)
	ctx[key] = val
	m.Context = ctx
	return m
}

// WithoutContext returns a copy of m whose context (deep-copied) lacks key.
func (m Message) WithoutContext(key string) Message {
	ctx := copyMap(m.Context)
	delete(ctx, key)
	m.Context = ctx
	return m
}

// Clone returns a deep copy of m: no map or slice is shared.
func (m Message) Clone() Message {
	return Message{Type: m.Type, Data: copyMap(m.Data), Context: copyMap(m.Context)}
}
