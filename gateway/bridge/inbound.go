package bridge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Inbound applies route r to message m from the satellite's bus and returns
// the message to publish on the hub's bus, with what it corrected, or an
// error wrapping ErrTwin or ErrNotAllowed. m is not modified.
//
// Rules, in order (BRIDGE-1 §3.1, §3.2, §3.4, §4.1):
//  1. a compat twin never crosses (the hub's twinner makes its own);
//  2. the type must be allowed by the route;
//  3. context.source is the participant id, whatever the satellite sent;
//  4. context.destination is HubDestination when absent, or when it names a
//     Chorus participant (a satellite cannot address another one);
//  5. context.session is an object with a string session_id (materialised
//     as "default" when absent, replaced when wrong-typed), then translated
//     by HubSessionID;
//  6. the route's blacklists are merged into the session, every time.
func Inbound(r Route, m envelope.Message) (envelope.Message, []Note, error) {
	if isTwin(m) {
		return envelope.Message{}, nil, fmt.Errorf("inbound %s from %s: %w", m.Type, r.Satellite, ErrTwin)
	}
	if !r.Allows(m.Type) {
		return envelope.Message{}, nil, fmt.Errorf("inbound %s from %s: %w", m.Type, r.Satellite, ErrNotAllowed)
	}
	out := m.Clone()
	if out.Context == nil {
		out.Context = map[string]any{}
	}
	var notes []Note
	notes = stampSource(r, out.Context, notes)
	notes = setDestination(out, notes)
	sess, notes := inboundSession(out.Context, notes)
	sess[envelope.KeySessionID] = HubSessionID(r.Satellite, sess[envelope.KeySessionID].(string))
	notes = mergeList(sess, KeyBlacklistedSkills, r.BlacklistedSkills, notes)
	notes = mergeList(sess, KeyBlacklistedIntents, r.BlacklistedIntents, notes)
	return out, notes, nil
}

func isTwin(m envelope.Message) bool {
	v, _ := m.Context[KeyTwin].(bool)
	return v
}

func stampSource(r Route, ctx map[string]any, notes []Note) []Note {
	pid := r.Participant()
	if src, present := ctx[envelope.KeySource]; present && src != pid && src != "" {
		notes = append(notes, Note{"context.source", fmt.Sprintf("%v replaced by %s (BRIDGE-1 §3.1)", src, pid)})
	}
	ctx[envelope.KeySource] = pid
	return notes
}

func setDestination(m envelope.Message, notes []Note) []Note {
	dst := m.Destination()
	if len(dst) == 0 {
		m.Context[envelope.KeyDestination] = HubDestination
		return notes
	}
	for _, d := range dst {
		if strings.HasPrefix(d, ParticipantPrefix) {
			m.Context[envelope.KeyDestination] = HubDestination
			return append(notes, Note{"context.destination", fmt.Sprintf("%v names a participant; replaced by %q", dst, HubDestination)})
		}
	}
	return notes
}

// inboundSession returns the context's session, made an object with a
// string session_id. A wrong-typed value is treated as omitted, loudly
// (seeds/001 §5.3, SESSION-1 §2).
func inboundSession(ctx map[string]any, notes []Note) (map[string]any, []Note) {
	raw := ctx[envelope.KeySession]
	sess, ok := raw.(map[string]any)
	switch {
	case raw == nil:
		sess = map[string]any{}
	case !ok:
		notes = append(notes, Note{"context.session", fmt.Sprintf("wrong type %s; replaced by a new session", jsonKind(raw))})
		sess = map[string]any{}
	}
	switch id := sess[envelope.KeySessionID].(type) {
	case string:
		if id == "" {
			sess[envelope.KeySessionID] = DefaultSession
		}
	case nil:
		sess[envelope.KeySessionID] = DefaultSession
	default:
		notes = append(notes, Note{"context.session.session_id", fmt.Sprintf("wrong type %s; read as %q", jsonKind(id), DefaultSession)})
		sess[envelope.KeySessionID] = DefaultSession
	}
	ctx[envelope.KeySession] = sess
	return sess, notes
}

// mergeList sets sess[key] to its string elements plus policy's, without
// duplicates, keeping the session's order first. A wrong-typed value is
// replaced. Nothing is added when both are empty.
func mergeList(sess map[string]any, key string, policy []string, notes []Note) []Note {
	have, wrong := stringList(sess[key])
	if wrong {
		notes = append(notes, Note{"context.session." + key, fmt.Sprintf("wrong type %s; replaced by the route's list", jsonKind(sess[key]))})
	}
	if len(have) == 0 && len(policy) == 0 {
		if wrong {
			delete(sess, key)
		}
		return notes
	}
	out := make([]any, 0, len(have)+len(policy))
	seen := map[string]bool{}
	for _, s := range slices.Concat(have, policy) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sess[key] = out
	return notes
}

// stringList reads a JSON array of strings; wrong is true when v is present
// but not an array (non-string elements are dropped silently).
func stringList(v any) (list []string, wrong bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				list = append(list, s)
			}
		}
		return list, false
	case []string:
		return slices.Clone(v), false
	}
	return nil, true
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any, []string:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}
