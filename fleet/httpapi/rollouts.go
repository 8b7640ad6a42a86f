package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
)

func (s *Server) createRollout(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SkillID  string              `json:"skill_id"`
		Version  string              `json:"version"`
		Action   fleet.RolloutAction `json:"action"`
		Targets  []fleet.Target      `json:"targets"`
		Strategy strategyView        `json:"strategy"`
	}
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := req.Strategy.strategy()
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
	writeJSON(w, http.StatusCreated, map[string]any{"rollout": newRolloutView(ro)})
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
	out := make([]rolloutView, 0, len(rs))
	for _, ro := range rs {
		out = append(out, newRolloutView(ro))
	}
	writeJSON(w, http.StatusOK, map[string]any{"rollouts": out})
}

func (s *Server) getRollout(w http.ResponseWriter, r *http.Request) {
	id, err := rolloutID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ro, execs, err := s.cfg.Fleet.GetRollout(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]executionView, 0, len(execs))
	for _, e := range execs {
		out = append(out, newExecutionView(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"rollout": newRolloutView(ro), "executions": out})
}

func (s *Server) pauseRollout(w http.ResponseWriter, r *http.Request) {
	s.rolloutAction(w, r, func(id int64) (*fleet.Rollout, error) { return s.cfg.Fleet.PauseRollout(r.Context(), actor, id) })
}

func (s *Server) resumeRollout(w http.ResponseWriter, r *http.Request) {
	s.rolloutAction(w, r, func(id int64) (*fleet.Rollout, error) { return s.cfg.Fleet.ResumeRollout(r.Context(), actor, id) })
}

func (s *Server) abortRollout(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Rollback bool `json:"rollback"`
	}
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
	writeJSON(w, http.StatusOK, map[string]any{"rollout": newRolloutView(ro)})
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
	if es == nil {
		es = []*fleet.AuditEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": es})
}
