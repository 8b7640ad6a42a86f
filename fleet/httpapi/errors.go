package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/chorus-edge/chorus/fleet"
)

// API error codes beyond fleet's (docs/api.md "Errors").
const (
	codeUnauthorized = "unauthorized"
	codeTooLarge     = "too_large"
)

// Body caps (docs/api.md).
const (
	maxJSONBody    = 1 << 20
	maxArchiveBody = 256 << 20
)

var statusOf = map[string]int{
	fleet.EINVALID:     http.StatusBadRequest,
	codeUnauthorized:   http.StatusUnauthorized,
	fleet.ENOTFOUND:    http.StatusNotFound,
	fleet.ECONFLICT:    http.StatusConflict,
	codeTooLarge:       http.StatusRequestEntityTooLarge,
	fleet.EINTERNAL:    http.StatusInternalServerError,
	fleet.EUNAVAILABLE: http.StatusServiceUnavailable,
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError answers err as {"error": {"code", "message"}}: fleet error
// codes map to their status; a body over its cap is too_large; anything
// else is internal, logged, and its details withheld.
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	code, msg := fleet.ErrorCode(err), fleet.ErrorMessage(err)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		code, msg = codeTooLarge, "request body over the limit of "+sizeText(tooBig.Limit)
	}
	status, ok := statusOf[code]
	if !ok {
		status, code = http.StatusInternalServerError, fleet.EINTERNAL
	}
	if code == fleet.EINTERNAL || code == fleet.EUNAVAILABLE {
		log.Error("http request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: msg}})
}

func writeCode(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: msg}})
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
