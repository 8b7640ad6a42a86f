package bridge

import (
	"slices"
	"strings"
)

// Message types the bridge knows by name.
const (
	TypeUtterance       = "recognizer_loop:utterance"
	TypeUtteranceHandle = "ovos.utterance.handle"
	TypeSkillDeregister = "ovos.skill.deregister"
)

// DefaultAllow is what a route lets a satellite send when it names no types:
// the utterance entry point under both names (PIPELINE-1 §9.1, seeds/001 §5.4).
var DefaultAllow = []string{TypeUtterance, TypeUtteranceHandle}

// Context and session keys the bridge reads or writes.
const (
	KeyBlacklistedSkills  = "blacklisted_skills"  // SESSION-1, BRIDGE-1 §4.1.1
	KeyBlacklistedIntents = "blacklisted_intents" // SESSION-1, BRIDGE-1 §4.1.1
	KeySkillID            = "skill_id"
	// KeyTwin is the private marker of a compat twin (seeds/001 §5.4,
	// the one ovos-bus-client uses).
	KeyTwin = "_namespace_compat_twin"
)

// HubDestination is the destination an inbound message gets when it has none
// (the HiveMind convention): the hub's skills. A hub skill's MSG-1 §5.2 reply
// then has source "skills" and destination the satellite's participant id.
const HubDestination = "skills"

// ParticipantPrefix starts every participant id the bridge stamps.
const ParticipantPrefix = "chorus:"

// Route relays one satellite's bus to a hub's bus under a policy. Device ids
// follow topic.ValidDeviceID (no ':'), which keeps the ids derived from them
// unambiguous.
type Route struct {
	Satellite string
	Hub       string
	// Allow lists the types the satellite may send the hub; empty means
	// DefaultAllow.
	Allow []string
	// BlacklistedSkills and BlacklistedIntents are merged into the session
	// of every inbound message (BRIDGE-1 §4.1 gate invariant).
	BlacklistedSkills  []string
	BlacklistedIntents []string
}

// Participant is the satellite's participant id: context.source of what it
// sends, context.destination of what is meant for it (BRIDGE-1 §3.1).
func (r Route) Participant() string { return ParticipantID(r.Satellite) }

// ParticipantID is "chorus:<satellite>".
func ParticipantID(satellite string) string { return ParticipantPrefix + satellite }

// Allows reports whether the satellite may send messages of type t.
func (r Route) Allows(t string) bool {
	if len(r.Allow) == 0 {
		return slices.Contains(DefaultAllow, t)
	}
	return slices.Contains(r.Allow, t)
}

// HubSessionID translates a satellite's session id to the hub side
// (BRIDGE-1 §3.2 NAT, keyed by the participant so it is stable across
// reconnects): "default" becomes "chorus-<satellite>" and any other id X
// becomes "chorus-<satellite>:X", so two satellites never share a hub-side
// session and none reaches the hub's own "default".
func HubSessionID(satellite, id string) string {
	base := "chorus-" + satellite
	if id == "" || id == DefaultSession {
		return base
	}
	return base + ":" + id
}

// SatelliteSessionID is the inverse of HubSessionID; ok is false when the
// hub-side id does not belong to the satellite.
func SatelliteSessionID(satellite, hubID string) (id string, ok bool) {
	base := "chorus-" + satellite
	switch {
	case hubID == base:
		return DefaultSession, true
	case strings.HasPrefix(hubID, base+":") && len(hubID) > len(base)+1:
		return hubID[len(base)+1:], true
	}
	return "", false
}

// DefaultSession is the device-local session id (SESSION-1).
const DefaultSession = "default"
