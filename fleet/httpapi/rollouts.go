package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

func (s *Server) createRollout(w http.ResponseWriter, r *http.Request) {
	var req api.RolloutRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := req.Strategy.Strategy()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ro, err := s.cfg.Fleet.CreateRollout(r.Context(), actor, &fleet.Rollout{
		SkillID: req.SkillID, Version: req.Version, Action: req.Action, Targets: req.Targets, Strategy: st})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.RolloutResponse{Rollout: api.NewRollout(ro)})
}

func (s *Server) listRollouts(w http.ResponseWriter, r *http.Request) {
	var f fleet.RolloutFilter
	if st := r.URL.Query().Get("state"); st != "" {
		f.States = []fleet.RolloutState{fleet.RolloutState(st)}
	}
	rs, err := s.cfg.Fleet.ListRollouts(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RolloutsResponse{Rollouts: api.NewRollouts(rs)})
}

func (s *Server) getRollout(w http.ResponseWriter, r *http.Request) {
	id, err := rolloutID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	execs, err := boolQuery(r, "executions", true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !execs {
		// The counts alone: a follower's poll costs one rollout, not one
		// row per device (docs/api.md).
		ro, err := s.cfg.Fleet.Rollout(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, api.RolloutResponse{Rollout: api.NewRollout(ro)})
		return
	}
	ro, list, err := s.cfg.Fleet.GetRollout(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RolloutDetail{Rollout: api.NewRollout(ro), Executions: api.NewExecutions(list)})
}

func (s *Server) pauseRollout(w http.ResponseWriter, r *http.Request) {
	s.rolloutAction(w, r, func(id int64) (*fleet.Rollout, error) { return s.cfg.Fleet.PauseRollout(r.Context(), actor, id) })
}

func (s *Server) resumeRollout(w http.ResponseWriter, r *http.Request) {
	s.rolloutAction(w, r, func(id int64) (*fleet.Rollout, error) { return s.cfg.Fleet.ResumeRollout(r.Context(), actor, id) })
}

func (s *Server) abortRollout(w http.ResponseWriter, r *http.Request) {
	var req api.AbortRequest
	if err := decodeJSON(w, r, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	s.rolloutAction(w, r, func(id int64) (*fleet.Rollout, error) {
		return s.cfg.Fleet.AbortRollout(r.Context(), actor, id, req.Rollback)
	})
}

func (s *Server) rolloutAction(w http.ResponseWriter, r *http.Request, do func(int64) (*fleet.Rollout, error)) {
	id, err := rolloutID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ro, err := do(id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RolloutResponse{Rollout: api.NewRollout(ro)})
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	limit, err := intQuery(r, "limit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.cfg.Fleet.ListAudit(r.Context(), fleet.AuditFilter{Subject: r.URL.Query().Get("subject")}, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.AuditResponse{Entries: api.Values(es)})
}
