package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// statusOf maps the error codes of docs/api.md to their HTTP status.
var statusOf = map[string]int{
	api.CodeInvalid:      http.StatusBadRequest,
	api.CodeUnauthorized: http.StatusUnauthorized,
	api.CodeNotFound:     http.StatusNotFound,
	api.CodeConflict:     http.StatusConflict,
	api.CodeTooLarge:     http.StatusRequestEntityTooLarge,
	api.CodeInternal:     http.StatusInternalServerError,
	api.CodeUnavailable:  http.StatusServiceUnavailable,
	api.CodeRateLimited:  http.StatusTooManyRequests,
}

// writeError answers err as {"error": {"code", "message"}}: fleet error
// codes map to their status; a body over its cap is too_large; anything
// else is internal, logged, and its details withheld.
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	code, msg := fleet.ErrorCode(err), fleet.ErrorMessage(err)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		code, msg = api.CodeTooLarge, "request body over the limit of "+sizeText(tooBig.Limit)
	}
	status, ok := statusOf[code]
	if !ok {
		status, code = http.StatusInternalServerError, fleet.EINTERNAL
	}
	if code == fleet.EINTERNAL || code == fleet.EUNAVAILABLE {
		log.Error("http request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeJSON(w, status, api.ErrorBody{Error: api.ErrorDetail{Code: code, Message: msg}})
}

// writeErrorCredentials is writeError with the credentials of a device
// whose add may have been stored (api.ErrorDetail.Credentials).
func writeErrorCredentials(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error, creds configs.AgentCredentials) {
	log.Error("http request failed; credentials returned with the error", "method", r.Method, "path", r.URL.Path, "error", err)
	writeJSON(w, http.StatusServiceUnavailable, api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeUnavailable,
		Message: fleet.ErrorMessage(err), Credentials: &creds}})
}

func writeCode(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.ErrorBody{Error: api.ErrorDetail{Code: code, Message: msg}})
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
