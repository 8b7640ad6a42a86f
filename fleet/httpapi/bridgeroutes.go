package httpapi

import (
	"context"
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
)

// RouteFleet is the part of the fleet that keeps bridging routes
// (docs/bridging.md). A Fleet without it answers the route endpoints with
// not_found.
type RouteFleet interface {
	ListRoutes(ctx context.Context) ([]*fleet.Route, error)
	PutRoute(ctx context.Context, actor string, r *fleet.Route) (*fleet.Route, error)
	RemoveRoute(ctx context.Context, actor, satellite string) error
}

func (s *Server) routeFleet(w http.ResponseWriter, r *http.Request) (RouteFleet, bool) {
	rf, ok := s.cfg.Fleet.(RouteFleet)
	if !ok {
		s.notFound(w, r)
	}
	return rf, ok
}

func (s *Server) listRoutes(w http.ResponseWriter, r *http.Request) {
	rf, ok := s.routeFleet(w, r)
	if !ok {
		return
	}
	rs, err := rf.ListRoutes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if rs == nil {
		rs = []*fleet.Route{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"routes": rs})
}

func (s *Server) putRoute(w http.ResponseWriter, r *http.Request) {
	rf, ok := s.routeFleet(w, r)
	if !ok {
		return
	}
	var req struct {
		Hub                string   `json:"hub"`
		Allow              []string `json:"allow"`
		BlacklistedSkills  []string `json:"blacklisted_skills"`
		BlacklistedIntents []string `json:"blacklisted_intents"`
	}
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := rf.PutRoute(r.Context(), actor, &fleet.Route{Satellite: r.PathValue("satellite"), Hub: req.Hub,
		Allow: req.Allow, BlacklistedSkills: req.BlacklistedSkills, BlacklistedIntents: req.BlacklistedIntents})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"route": rt})
}

func (s *Server) removeRoute(w http.ResponseWriter, r *http.Request) {
	rf, ok := s.routeFleet(w, r)
	if !ok {
		return
	}
	if err := rf.RemoveRoute(r.Context(), actor, r.PathValue("satellite")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
