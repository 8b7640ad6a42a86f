package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/chorus-edge/chorus/fleet/api"
)

// actor is the audit log's name for requests made with the operator token.
const actor = "operator"

// operator wraps h with the bearer-token check (constant-time compare).
func (s *Server) operator(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || s.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="chorus"`)
			writeCode(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or wrong operator token")
			return
		}
		h(w, r)
	}
}

// device wraps h with the device Basic auth check.
func (s *Server) device(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || s.cfg.VerifyDevice == nil || !s.cfg.VerifyDevice(user, pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="chorus"`)
			writeCode(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or wrong device credentials")
			return
		}
		h(w, r)
	}
}
