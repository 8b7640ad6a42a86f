package envelope

import (
	"fmt"
	"strings"
)

// The derivations of MSG-1 §5 for M = {T, D, C}. All are pure: the new
// context is a deep copy of C, so mutating the result never touches m (the
// shipped Python forward aliases C; ovos-behaviour §3.1). data is used as
// given (nil reads as {}), not copied: it is the caller's new payload.
//
// Every derivation also:
//   - keeps all other context keys, the session and utterance_id unchanged
//     (MSG-1 §4.1, §4.2: utterance_id is never overwritten);
//   - materializes {"session_id": "default"} when C has no session (absent
//     or null), the MAY of MSG-1 §5.1/§5.2, so downstream readers always
//     find one (a present session, even a malformed one, is carried as is);
//   - drops a source or destination that is "" or an empty array, since
//     empty strings MUST NOT be emitted (MSG-1 §3).

// Forward derives {t, data, C}: the context is carried unchanged, including
// source, destination and session; the forwarder does not become the source
// (MSG-1 §5.1).
func (m Message) Forward(t string, data map[string]any) Message {
	return derived(t, data, copyMap(m.Context))
}

// Reply derives {t, data, C'} where C' is C with the routing keys turned
// around (MSG-1 §5.2):
//  1. if C.destination is set, C'.source = C.destination (its first
//     non-empty string element when it is an array);
//  2. if C.source is set, C'.destination = C.source;
//  3. a key whose counterpart is absent is left as it was: a broadcast (no
//     destination) keeps its source and only gains a destination.
//
// This follows the spec, not shipped ovos-bus-client, which swaps only when
// both keys exist and moves an array destination whole into source
// (ovos-behaviour §4.1, "Where the code differs" 1-2). With the spec's rule
// an utterance from "sat-7" carrying only source: "sat-7" yields replies with
// source and destination "sat-7" at every hop (MSG-1 §5.2 worked example).
func (m Message) Reply(t string, data map[string]any) Message {
	ctx := copyMap(m.Context)
	if dst := m.Destination(); len(dst) > 0 {
		ctx[KeySource] = dst[0]
	}
	if src := m.Source(); src != "" {
		ctx[KeyDestination] = src
	}
	return derived(t, data, ctx)
}

// Response derives Reply(T + ".response", data) (MSG-1 §5.3). It is
// undefined, and refused with an error matching ErrNoResponse, when T already
// ends in ".response" or contains ':' (a dispatch or legacy type).
func (m Message) Response(data map[string]any) (Message, error) {
	if strings.HasSuffix(m.Type, ".response") {
		return Message{}, fmt.Errorf("response to %q: type already ends in .response: %w", m.Type, ErrNoResponse)
	}
	if strings.Contains(m.Type, ":") {
		return Message{}, fmt.Errorf("response to %q: type contains ':': %w", m.Type, ErrNoResponse)
	}
	return m.Reply(m.Type+".response", data), nil
}

// derived finishes a derivation on ctx, which the caller owns.
func derived(t string, data, ctx map[string]any) Message {
	if data == nil {
		data = map[string]any{}
	}
	dropEmptyRoute(ctx, KeySource)
	dropEmptyRoute(ctx, KeyDestination)
	if ctx[KeySession] == nil {
		ctx[KeySession] = map[string]any{KeySessionID: DefaultSessionID}
	}
	return Message{Type: t, Data: data, Context: ctx}
}

func dropEmptyRoute(ctx map[string]any, key string) {
	switch v := ctx[key].(type) {
	case string:
		if v == "" {
			delete(ctx, key)
		}
	case []any:
		if len(v) == 0 {
			delete(ctx, key)
		}
	case []string:
		if len(v) == 0 {
			delete(ctx, key)
		}
	}
}
