package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

func (s *Server) listIntegrations(w http.ResponseWriter, r *http.Request) {
	is, err := s.cfg.Fleet.ListIntegrations(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.IntegrationsResponse{Integrations: make([]fleet.Integration, 0, len(is))}
	for _, i := range is {
		out.Integrations = append(out.Integrations, api.NewIntegration(i))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addIntegration(w http.ResponseWriter, r *http.Request) {
	var req api.IntegrationRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	i, creds, err := s.cfg.Fleet.AddIntegration(r.Context(), actor, req.Name, req.Allow)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.IntegrationAdded{Integration: api.NewIntegration(i), Credentials: creds})
}

func (s *Server) removeIntegration(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveIntegration(r.Context(), actor, r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listOperators(w http.ResponseWriter, r *http.Request) {
	os, err := s.cfg.Fleet.ListOperators(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.OperatorsResponse{Operators: api.Values(os)})
}

func (s *Server) addOperator(w http.ResponseWriter, r *http.Request) {
	var req api.OperatorRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	o, creds, err := s.cfg.Fleet.AddOperator(r.Context(), actor, req.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.OperatorAdded{Operator: *o, Credentials: creds})
}

func (s *Server) removeOperator(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveOperator(r.Context(), actor, r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
