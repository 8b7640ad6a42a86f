package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// Skill grants (docs/api.md, "Skill grants"; docs/security.md).

func (s *Server) listSkillGrants(w http.ResponseWriter, r *http.Request) {
	gs, err := s.cfg.Fleet.ListSkillGrants(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.GrantsResponse{Grants: api.Values(gs)})
}

func (s *Server) putSkillGrant(w http.ResponseWriter, r *http.Request) {
	var req api.GrantRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	g, err := s.cfg.Fleet.PutSkillGrant(r.Context(), actor, &fleet.SkillGrant{Skill: r.PathValue("skill"), Device: req.Device, Allow: req.Allow})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.GrantResponse{Grant: *g})
}

// removeSkillGrant deletes the grant of {skill} on ?device=D, or the
// fleet-wide grant without it.
func (s *Server) removeSkillGrant(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveSkillGrant(r.Context(), actor, r.PathValue("skill"), r.URL.Query().Get("device")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
