package bridge

import (
	"fmt"
	"slices"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// pollFamily are the poll-family types of BRIDGE-1 §3.2 (seeds/001 §5.8):
// never relayed to a participant hosting no skill in the message's session.
var pollFamily = map[string]bool{
	"ovos.converse.ping": true, "ovos.converse.pong": true,
	"ovos.common_query.ping": true, "ovos.common_query.pong": true,
	"ovos.common_query.request": true, "ovos.common_query.response": true,
	"ovos.fallback.ping": true, "ovos.fallback.pong": true,
	"ovos.stop.ping": true, "ovos.stop.pong": true,
}

// IsPoll reports whether t is a poll-family type.
func IsPoll(t string) bool { return pollFamily[t] }

// OutboundOptions are what Outbound needs to know besides the route.
type OutboundOptions struct {
	// HostsSkills: the satellite's retained skills topic lists at least one
	// loaded skill. Its skills live in its own sessions, so "hosts a skill
	// in the message's session" is HostsSkills and a session of its own.
	HostsSkills bool
	// BySession also relays a message without the participant in its
	// destination when its session is one of the satellite's (the MAY of
	// BRIDGE-1 §3.2, e.g. a session-scoped ovos.utterance.speak).
	BySession bool
}

// Outbound applies route r to message m from the hub's bus and returns the
// message to publish on the satellite's bus, with what it corrected, or an
// error wrapping ErrTwin, ErrNotAddressed or ErrPollFiltered. m is not
// modified.
//
// Rules (BRIDGE-1 §3.2, §3.4; seeds/001 §5.8):
//  1. a compat twin never crosses (the satellite's twinner makes its own);
//  2. the destination (string or array) names the participant, or, with
//     BySession, the session is the satellite's;
//  3. a poll-family message crosses only to a satellite hosting skills,
//     in one of its own sessions;
//  4. the session is translated back (SatelliteSessionID) and the route's
//     blacklists taken out of it again, so a policy change is never pinned
//     in the satellite's session; a session that is not the satellite's
//     (the hub's own, another participant's) is never shown to it: it is
//     replaced by {"session_id": "default"}, the satellite's own.
func Outbound(r Route, m envelope.Message, o OutboundOptions) (envelope.Message, []Note, error) {
	if isTwin(m) {
		return envelope.Message{}, nil, fmt.Errorf("outbound %s to %s: %w", m.Type, r.Satellite, ErrTwin)
	}
	satID, own := SatelliteSessionID(r.Satellite, m.SessionID())
	addressed := slices.Contains(m.Destination(), r.Participant())
	if !addressed && !(o.BySession && own) {
		return envelope.Message{}, nil, fmt.Errorf("outbound %s to %s: %w", m.Type, r.Satellite, ErrNotAddressed)
	}
	if IsPoll(m.Type) && !(o.HostsSkills && own) {
		return envelope.Message{}, nil, fmt.Errorf("outbound %s to %s: %w", m.Type, r.Satellite, ErrPollFiltered)
	}
	out := m.Clone()
	var notes []Note
	if !own {
		if m.Context[envelope.KeySession] != nil {
			notes = append(notes, Note{"context.session", fmt.Sprintf("session %q is not %s's; replaced by its default", m.SessionID(), r.Satellite)})
		}
		out.Context[envelope.KeySession] = map[string]any{envelope.KeySessionID: DefaultSession}
		return out, notes, nil
	}
	sess := out.Session()
	sess[envelope.KeySessionID] = satID
	removeList(sess, KeyBlacklistedSkills, r.BlacklistedSkills)
	removeList(sess, KeyBlacklistedIntents, r.BlacklistedIntents)
	return out, notes, nil
}

// removeList takes policy's entries out of sess[key]; an emptied list is
// removed.
func removeList(sess map[string]any, key string, policy []string) {
	if len(policy) == 0 {
		return
	}
	have, wrong := stringList(sess[key])
	if wrong || sess[key] == nil {
		return
	}
	var out []any
	for _, s := range have {
		if !slices.Contains(policy, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		delete(sess, key)
		return
	}
	sess[key] = out
}
