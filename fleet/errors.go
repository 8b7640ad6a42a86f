package fleet

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP API maps them to status codes (invalid → 400,
// not_found → 404, conflict → 409, unavailable → 503, internal → 500) and the CLI to exit codes.
const (
	EINVALID  = "invalid"   // the request breaks a rule; nothing changed
	ENOTFOUND = "not_found" // the named thing does not exist
	ECONFLICT = "conflict"  // it already exists, or differs from what exists
	EINTERNAL = "internal"  // anything else: a bug or an I/O failure
	// EUNAVAILABLE: the database cannot take the change now (busy past its
	// timeout, disk or size limit full, I/O error); nothing changed, retry.
	EUNAVAILABLE = "unavailable"
	// EUNAUTHORIZED: a credential is missing or wrong (a join token's
	// secret, a pending enrolment's poll secret); nothing changed.
	EUNAUTHORIZED = "unauthorized"
)

// Error is an application error: a code callers branch on and a message fit
// for an operator. Errors that are not *Error are internal; their details
// belong in logs, not in API responses (wtf error.go).
type Error struct {
	Code    string
	Message string
}

// Sentinels for errors.Is. Any *Error matches the sentinel of its code, so
// errors.Is(Errorf(ENOTFOUND, "device %q not found", id), ErrNotFound) holds.
var (
	ErrInvalid  = &Error{Code: EINVALID}
	ErrNotFound = &Error{Code: ENOTFOUND}
	ErrConflict = &Error{Code: ECONFLICT}
)

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "fleet: " + e.Code
	}
	return e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorCode returns the code of the first *Error in err's chain: "" for nil,
// EINTERNAL for an error that is not an application error.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the operator-facing message of err: the message of an
// *Error, or "Internal error." for anything else.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Error()
	}
	return "Internal error."
}
