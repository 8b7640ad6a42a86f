package httpapi

import (
	"context"
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
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
	writeJSON(w, http.StatusOK, api.RoutesResponse{Routes: api.Values(rs)})
}

func (s *Server) putRoute(w http.ResponseWriter, r *http.Request) {
	rf, ok := s.routeFleet(w, r)
	if !ok {
		return
	}
	var req api.RouteRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	rt, err := rf.PutRoute(r.Context(), actor, req.Route(r.PathValue("satellite")))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RouteResponse{Route: *rt})
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
