package fleet

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// MaxRouteList caps each list of a route's policy.
const MaxRouteList = 256

// Route relays a satellite's bus to a hub device's bus (docs/bridging.md,
// BRIDGE-1): the satellite's utterances are answered by the hub's skills.
// A device is the satellite of at most one route; a satellite is never a
// hub and a hub never a satellite (no cascades).
type Route struct {
	Satellite string `json:"satellite"`
	Hub       string `json:"hub"`
	// Allow lists the bus message types the satellite may send the hub;
	// empty means the utterance entry point (recognizer_loop:utterance,
	// ovos.utterance.handle).
	Allow []string `json:"allow"`
	// BlacklistedSkills and BlacklistedIntents are merged into the session
	// of every message the satellite sends.
	BlacklistedSkills  []string  `json:"blacklisted_skills"`
	BlacklistedIntents []string  `json:"blacklisted_intents"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// Validate checks the ids and the policy lists.
func (r *Route) Validate() error {
	if err := ValidDeviceID(r.Satellite); err != nil {
		return err
	}
	if err := ValidDeviceID(r.Hub); err != nil {
		return Errorf(EINVALID, "route %s: hub: %v", r.Satellite, err)
	}
	if r.Satellite == r.Hub {
		return Errorf(EINVALID, "route %s: a device cannot be its own hub", r.Satellite)
	}
	for _, t := range r.Allow {
		if err := topic.ValidLevel(t); err != nil {
			return Errorf(EINVALID, "route %s: allow: %v", r.Satellite, err)
		}
	}
	for _, s := range r.BlacklistedSkills {
		if err := ValidSkillID(s); err != nil {
			return Errorf(EINVALID, "route %s: blacklisted skill: %v", r.Satellite, err)
		}
	}
	for _, i := range r.BlacklistedIntents {
		if i == "" || len(i) > 256 {
			return Errorf(EINVALID, "route %s: blacklisted intent %q: want 1 to 256 characters", r.Satellite, i)
		}
	}
	if max(len(r.Allow), len(r.BlacklistedSkills), len(r.BlacklistedIntents)) > MaxRouteList {
		return Errorf(EINVALID, "route %s: more than %d entries in a list", r.Satellite, MaxRouteList)
	}
	return nil
}

// Normalize sorts and de-duplicates the policy lists, never nil.
func (r *Route) Normalize() {
	r.Allow = nonNil(NormalizeTags(r.Allow))
	r.BlacklistedSkills = nonNil(NormalizeTags(r.BlacklistedSkills))
	r.BlacklistedIntents = nonNil(NormalizeTags(r.BlacklistedIntents))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// RouteService keeps the routes. PutRoute creates or replaces the route of
// r.Satellite (both devices must exist: ENOTFOUND; a cascade is ECONFLICT).
// Removing either device removes the route.
type RouteService interface {
	PutRoute(ctx context.Context, r *Route) error
	GetRoute(ctx context.Context, satellite string) (*Route, error)
	ListRoutes(ctx context.Context) ([]*Route, error)
	DeleteRoute(ctx context.Context, satellite string) error
}
