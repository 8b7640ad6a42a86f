package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

func (s *Server) publishSkill(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, api.MaxArchiveBody)
	v, err := s.cfg.Fleet.PublishSkill(r.Context(), actor, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.SkillResponse{Skill: api.NewSkillVersion(v)})
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	vs, err := s.cfg.Fleet.ListSkills(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SkillsResponse{Skills: api.NewSkillVersions(vs)})
}

func (s *Server) getSkill(w http.ResponseWriter, r *http.Request) {
	latest, all, err := s.cfg.Fleet.GetSkill(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SkillDetail{Skill: api.NewSkillVersion(latest), Versions: api.NewSkillVersions(all)})
}

func (s *Server) searchSkills(w http.ResponseWriter, r *http.Request) {
	limit, err := intQuery(r, "limit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	vs, scores, err := s.cfg.Fleet.Search(r.Context(), r.URL.Query().Get("q"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.SearchResponse{Results: make([]api.SearchResult, 0, len(vs))}
	for i, v := range vs {
		out.Results = append(out.Results, api.SearchResult{Skill: api.NewSkillVersion(v), Score: scores[i]})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) resolveSkill(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if q == "" {
		s.fail(w, r, fleet.Errorf(fleet.EINVALID, "q: a skill name is required"))
		return
	}
	v, err := s.cfg.Fleet.Resolve(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SkillResponse{Skill: api.NewSkillVersion(v)})
}

func (s *Server) configSkill(w http.ResponseWriter, r *http.Request) {
	var req api.SkillConfigRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := s.cfg.Fleet.SetSkillConfig(r.Context(), actor, r.PathValue("id"), req.Target, req.Settings)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.AssignmentResponse{Assignment: *a})
}

// artifact serves an archive to a device; http.ServeContent answers Range
// and conditional requests. The sha256 is the strong ETag.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	sum := r.PathValue("sha256")
	device, _, _ := r.BasicAuth() // checked by s.device
	f, err := s.cfg.Fleet.OpenArtifact(r.Context(), device, sum)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("ETag", `"`+sum+`"`)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
