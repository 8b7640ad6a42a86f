package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// fleetRoutes registers the /v1 API of docs/api.md.
func (s *Server) fleetRoutes(mux *http.ServeMux) {
	op := s.operator
	mux.HandleFunc("GET /v1/devices", op(s.listDevices))
	mux.HandleFunc("POST /v1/devices", op(s.addDevice))
	mux.HandleFunc("GET /v1/devices/{id}", op(s.getDevice))
	mux.HandleFunc("DELETE /v1/devices/{id}", op(s.removeDevice))
	mux.HandleFunc("PUT /v1/devices/{id}/tags", op(s.setTags))
	mux.HandleFunc("POST /v1/devices/{id}/rotate", op(s.rotateDevice))

	mux.HandleFunc("POST /v1/join-tokens", op(s.createJoinToken))
	mux.HandleFunc("GET /v1/join-tokens", op(s.listJoinTokens))
	mux.HandleFunc("DELETE /v1/join-tokens/{id}", op(s.revokeJoinToken))
	mux.HandleFunc("POST /v1/join", s.limited(s.join))
	mux.HandleFunc("POST /v1/join/{id}", s.limited(s.pollJoin))
	mux.HandleFunc("GET /v1/pending-devices", op(s.listPending))
	mux.HandleFunc("POST /v1/pending-devices/{id}/accept", op(s.acceptPending))
	mux.HandleFunc("POST /v1/pending-devices/{id}/reject", op(s.rejectPending))

	mux.HandleFunc("GET /v1/integrations", op(s.listIntegrations))
	mux.HandleFunc("POST /v1/integrations", op(s.addIntegration))
	mux.HandleFunc("DELETE /v1/integrations/{name}", op(s.removeIntegration))
	mux.HandleFunc("GET /v1/operators", op(s.listOperators))
	mux.HandleFunc("POST /v1/operators", op(s.addOperator))
	mux.HandleFunc("DELETE /v1/operators/{name}", op(s.removeOperator))

	mux.HandleFunc("POST /v1/skills", op(s.publishSkill))
	mux.HandleFunc("GET /v1/skills", op(s.listSkills))
	mux.HandleFunc("GET /v1/skills/search", op(s.searchSkills))
	mux.HandleFunc("GET /v1/skills/resolve", op(s.resolveSkill))
	mux.HandleFunc("GET /v1/skills/{id}", op(s.getSkill))
	mux.HandleFunc("PUT /v1/skills/{id}/config", op(s.configSkill))
	mux.HandleFunc("GET /v1/artifacts/{sha256}", s.device(s.artifact))
	mux.HandleFunc("POST /v1/device/skills", s.device(s.deviceSkills))

	mux.HandleFunc("POST /v1/rollouts", op(s.createRollout))
	mux.HandleFunc("GET /v1/rollouts", op(s.listRollouts))
	mux.HandleFunc("GET /v1/rollouts/{id}", op(s.getRollout))
	mux.HandleFunc("POST /v1/rollouts/{id}/pause", op(s.pauseRollout))
	mux.HandleFunc("POST /v1/rollouts/{id}/resume", op(s.resumeRollout))
	mux.HandleFunc("POST /v1/rollouts/{id}/abort", op(s.abortRollout))

	mux.HandleFunc("GET /v1/routes", op(s.listRoutes))
	mux.HandleFunc("PUT /v1/routes/{satellite}", op(s.putRoute))
	mux.HandleFunc("DELETE /v1/routes/{satellite}", op(s.removeRoute))

	mux.HandleFunc("GET /v1/skill-grants", op(s.listSkillGrants))
	mux.HandleFunc("PUT /v1/skill-grants/{skill}", op(s.putSkillGrant))
	mux.HandleFunc("DELETE /v1/skill-grants/{skill}", op(s.removeSkillGrant))

	mux.HandleFunc("GET /v1/audit", op(s.listAudit))
	mux.HandleFunc("GET /v1/export/mosquitto", op(s.exportMosquitto))
	mux.HandleFunc("GET /v1/export/mosquitto/dynsec", op(s.exportDynSec))
	mux.HandleFunc("POST /v1/emqx/authn", s.brokerAuth(s.emqxAuthn))
	mux.HandleFunc("POST /v1/emqx/authz", s.brokerAuth(s.emqxAuthz))
	mux.HandleFunc("/v1/", op(s.notFound))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeCode(w, http.StatusNotFound, fleet.ENOTFOUND, "no such API endpoint: "+r.Method+" "+r.URL.Path)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, s.cfg.Logger, r, err)
}

// decodeJSON reads a JSON body of at most api.MaxJSONBody bytes into v. An
// empty body leaves v as it is when optional; unknown fields are refused so
// a misspelled field is an error, not a silent default.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	body := http.MaxBytesReader(w, r.Body, api.MaxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var tooBig *http.MaxBytesError
	var invalid *fleet.Error
	switch {
	case errors.Is(err, io.EOF) && optional:
		return nil
	case errors.Is(err, io.EOF):
		return fleet.Errorf(fleet.EINVALID, "request body: want a JSON object")
	case errors.As(err, &tooBig):
		return err
	case errors.As(err, &invalid):
		return err // a field's own check (api.Duration), naming the field
	case err != nil:
		return fleet.Errorf(fleet.EINVALID, "request body: %v", err)
	}
	if dec.More() {
		return fleet.Errorf(fleet.EINVALID, "request body: more than one JSON value")
	}
	return nil
}

// intQuery reads an optional non-negative integer query parameter.
func intQuery(r *http.Request, name string) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, fleet.Errorf(fleet.EINVALID, "%s %q: want a non-negative integer", name, raw)
	}
	return n, nil
}

// boolQuery reads a "true" or "false" query parameter; absent is def.
func boolQuery(r *http.Request, name string, def bool) (bool, error) {
	switch raw := r.URL.Query().Get(name); raw {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, fleet.Errorf(fleet.EINVALID, "%s %q: want true or false", name, raw)
	}
}

func rolloutID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, fleet.Errorf(fleet.EINVALID, "rollout id %q: want a positive integer", raw)
	}
	return id, nil
}
