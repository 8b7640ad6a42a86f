package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet/api"
)

// deviceSkills is a device asking for its own skills (SKILL_MANAGER §10).
// The device is the Basic auth user that s.device verified; the body names
// no device, so a device can only ever change its own assignments.
func (s *Server) deviceSkills(w http.ResponseWriter, r *http.Request) {
	var req api.DeviceSkillsRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	device, _, _ := r.BasicAuth()
	doc, err := s.cfg.Fleet.RequestSkills(r.Context(), device, req.Action, req.Packages)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NewDeviceSkillsResponse(doc))
}
