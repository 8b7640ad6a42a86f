package httpapi

import (
	"net/http"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

type integrationView struct {
	Name      string    `json:"name"`
	Allow     []string  `json:"allow"`
	CreatedAt time.Time `json:"created_at"`
}

type operatorView struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

func newIntegrationView(i *fleet.Integration) integrationView {
	allow := i.Allow
	if allow == nil {
		allow = []string{}
	}
	return integrationView{Name: i.Name, Allow: allow, CreatedAt: i.CreatedAt}
}

func (s *Server) listIntegrations(w http.ResponseWriter, r *http.Request) {
	is, err := s.cfg.Fleet.ListIntegrations(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]integrationView, 0, len(is))
	for _, i := range is {
		out = append(out, newIntegrationView(i))
	}
	writeJSON(w, http.StatusOK, map[string]any{"integrations": out})
}

func (s *Server) addIntegration(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name  string   `json:"name"`
		Allow []string `json:"allow"`
	}
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	i, creds, err := s.cfg.Fleet.AddIntegration(r.Context(), actor, req.Name, req.Allow)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"integration": newIntegrationView(i), "credentials": creds})
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
	out := make([]operatorView, 0, len(os))
	for _, o := range os {
		out = append(out, operatorView{Name: o.Name, CreatedAt: o.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"operators": out})
}

func (s *Server) addOperator(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	o, creds, err := s.cfg.Fleet.AddOperator(r.Context(), actor, req.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"operator": operatorView{Name: o.Name, CreatedAt: o.CreatedAt}, "credentials": creds})
}

func (s *Server) removeOperator(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveOperator(r.Context(), actor, r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
