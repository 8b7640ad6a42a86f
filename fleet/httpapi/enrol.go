package httpapi

import (
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

func (s *Server) createJoinToken(w http.ResponseWriter, r *http.Request) {
	var req api.CreateJoinTokenRequest
	if err := decodeJSON(w, r, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Uses < 0 || req.TTLSeconds < 0 {
		s.fail(w, r, fleet.Errorf(fleet.EINVALID, "uses and ttl_seconds: want positive numbers (or 0 for the defaults)"))
		return
	}
	issued, err := s.cfg.Fleet.CreateJoinToken(r.Context(), actor, req.Tags, req.Uses, time.Duration(req.TTLSeconds)*time.Second, req.Approve)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	text := api.JoinToken{URL: issued.URL, ID: issued.Token.ID, Secret: issued.Secret, CAPin: issued.CAPin}.String()
	writeJSON(w, http.StatusCreated, api.JoinTokenCreated{Token: *issued.Token, Text: text})
}

func (s *Server) listJoinTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.cfg.Fleet.ListJoinTokens(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.JoinTokensResponse{Tokens: api.Values(ts)})
}

func (s *Server) revokeJoinToken(w http.ResponseWriter, r *http.Request) {
	t, err := s.cfg.Fleet.RevokeJoinToken(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.JoinTokenResponse{Token: *t})
}

// join is POST /v1/join: unauthenticated, authorised by the token in the
// body, rate limited (limited) and capped at api.MaxJoinBody.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, api.MaxJoinBody)
	var req api.JoinRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Fleet.Join(r.Context(), clientHost(r), req.Token, req.Secret, req.Device)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.Credentials != nil {
		writeJSON(w, http.StatusCreated, api.JoinResponse{Status: api.JoinAccepted, Credentials: res.Credentials})
		return
	}
	writeJSON(w, http.StatusAccepted, api.JoinResponse{Status: api.JoinPending,
		Pending: &api.PendingTicket{ID: res.Pending.ID, Secret: res.PollSecret}})
}

// pollJoin is POST /v1/join/{id}: a pending agent, with its poll secret as
// bearer token, asking whether it was accepted.
func (s *Server) pollJoin(w http.ResponseWriter, r *http.Request) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || secret == "" {
		writeCode(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing poll secret: send the secret POST /v1/join answered as a bearer token")
		return
	}
	res, err := s.cfg.Fleet.PollJoin(r.Context(), r.PathValue("id"), secret)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.Credentials != nil {
		writeJSON(w, http.StatusOK, api.JoinResponse{Status: api.JoinAccepted, Credentials: res.Credentials})
		return
	}
	writeJSON(w, http.StatusAccepted, api.JoinResponse{Status: api.JoinPending})
}

func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	ps, err := s.cfg.Fleet.ListPending(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.PendingDevicesResponse{Pending: api.Values(ps)})
}

func (s *Server) acceptPending(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Fleet.AcceptPending(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, d)
}

func (s *Server) rejectPending(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RejectPending(r.Context(), actor, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
