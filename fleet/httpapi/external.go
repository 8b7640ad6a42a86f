package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// Exports renders the fleet's auth table for Mosquitto 2
// (fleet/external.Exporter): the password and ACL files, and the config file
// of the dynamic-security plugin, skills included. Without it (Config.Exports
// nil) GET /v1/export/mosquitto and .../dynsec answer 404.
type Exports interface {
	ExportMosquitto(ctx context.Context) (passwordFile, aclFile []byte, skipped []string, err error)
	ExportMosquittoDynSec(ctx context.Context) (file []byte, skipped []string, err error)
}

// BrokerAuth answers an external broker's HTTP auth backend (the request
// shape EMQX's HTTP authenticator and authorizer send; fleet/external.Auth).
// The endpoints are off (404) unless Secret is non-empty; every request must
// carry it in the EMQXSecretHeader header.
type BrokerAuth interface {
	Secret() string
	Authenticate(username, password string) (ok, superuser bool)
	Authorize(username, topic, action string, retain bool) bool
}

// EMQXSecretHeader carries the shared secret of the broker auth endpoints.
const EMQXSecretHeader = "X-Chorus-Broker-Secret"

func (s *Server) exportMosquitto(w http.ResponseWriter, r *http.Request) {
	ex := s.cfg.Exports
	if ex == nil {
		writeCode(w, http.StatusNotFound, fleet.ENOTFOUND, "this gateway does not export Mosquitto files")
		return
	}
	pw, acl, skipped, err := ex.ExportMosquitto(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if skipped == nil {
		skipped = []string{}
	}
	writeJSON(w, http.StatusOK, api.MosquittoExport{PasswordFile: string(pw), ACLFile: string(acl), Skipped: skipped})
}

// exportDynSec answers {"dynamic_security": <the plugin's file>, "skipped": [...]}.
func (s *Server) exportDynSec(w http.ResponseWriter, r *http.Request) {
	ex := s.cfg.Exports
	if ex == nil {
		writeCode(w, http.StatusNotFound, fleet.ENOTFOUND, "this gateway does not export a Mosquitto dynamic-security file")
		return
	}
	file, skipped, err := ex.ExportMosquittoDynSec(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if skipped == nil {
		skipped = []string{}
	}
	writeJSON(w, http.StatusOK, api.MosquittoDynSec{DynamicSecurity: file, Skipped: skipped})
}

// brokerAuth checks the shared secret and hands the decoded body to h.
func (s *Server) brokerAuth(h func(BrokerAuth, map[string]json.RawMessage) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ba := s.cfg.BrokerAuth
		if ba == nil || ba.Secret() == "" {
			writeCode(w, http.StatusNotFound, fleet.ENOTFOUND, "broker HTTP auth is not enabled on this gateway")
			return
		}
		got := r.Header.Get(EMQXSecretHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(ba.Secret())) != 1 {
			writeCode(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or wrong "+EMQXSecretHeader)
			return
		}
		// EMQX sends what its body template names: unknown fields are
		// ignored, and values may be strings or (retain) booleans.
		var body map[string]json.RawMessage
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body); err != nil {
			writeCode(w, http.StatusBadRequest, fleet.EINVALID, "request body: want a JSON object")
			return
		}
		writeJSON(w, http.StatusOK, h(ba, body))
	}
}

func field(body map[string]json.RawMessage, name string) string {
	var s string
	if json.Unmarshal(body[name], &s) == nil {
		return s
	}
	return ""
}

func result(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}

// emqxAuthn answers {"username","password","clientid"} with
// {"result":"allow"|"deny","is_superuser":bool}.
func (s *Server) emqxAuthn(ba BrokerAuth, body map[string]json.RawMessage) any {
	ok, super := ba.Authenticate(field(body, "username"), field(body, "password"))
	return api.EMQXAuthnResult{Result: result(ok), IsSuperuser: super}
}

// emqxAuthz answers {"username","topic","action"[,"retain"]} with
// {"result":"allow"|"deny"}. retain may be a boolean or "true"/"1".
func (s *Server) emqxAuthz(ba BrokerAuth, body map[string]json.RawMessage) any {
	var retain bool
	if json.Unmarshal(body["retain"], &retain) != nil {
		r := strings.ToLower(field(body, "retain"))
		retain = r == "true" || r == "1"
	}
	ok := ba.Authorize(field(body, "username"), field(body, "topic"), field(body, "action"), retain)
	return api.EMQXAuthzResult{Result: result(ok)}
}
