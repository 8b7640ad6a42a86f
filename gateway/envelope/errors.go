package envelope

import (
	"errors"
	"fmt"
)

// Kinds of malformed input. Every error returned by Decode is a *DecodeError
// whose Kind is one of these, so callers can branch with errors.Is. MSG-1 §6.1:
// a malformed message is dropped and logged; it never tears anything down.
var (
	ErrNotUTF8     = errors.New("not UTF-8")
	ErrNotJSON     = errors.New("not JSON")
	ErrTooDeep     = errors.New("nested too deep")
	ErrBadNumber   = errors.New("number not finite")
	ErrNotObject   = errors.New("not a JSON object")
	ErrMissingType = errors.New("missing type")
	ErrBadType     = errors.New("bad type")
	ErrBadData     = errors.New("data not an object")
	ErrBadContext  = errors.New("context not an object")
	ErrAmbiguous   = errors.New("ambiguous key") // a known key twice or in another case (header.go)
)

// ErrNoResponse is returned by Message.Response when MSG-1 §5.3 leaves the
// response undefined: T already ends in ".response" or contains ":".
var ErrNoResponse = errors.New("response undefined")

// DecodeError describes why bytes are not a Message.
type DecodeError struct {
	Kind   error  // one of the Err* kinds above
	Field  string // top-level key at fault ("type", "data", "context"), or ""
	Detail string // what exactly is wrong, for logs
	Err    error  // underlying cause (a json or type error), or nil
}

func (e *DecodeError) Error() string {
	msg := "decode message: " + e.Kind.Error()
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes both the kind and the cause to errors.Is / errors.As.
func (e *DecodeError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func decodeErr(kind error, field, detail string) *DecodeError {
	return &DecodeError{Kind: kind, Field: field, Detail: detail}
}

// TypeError says why a message type is refused. It matches ErrBadType.
type TypeError struct {
	Type   string
	Reason string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("message type %q: %s", e.Type, e.Reason)
}

// Is makes errors.Is(err, ErrBadType) true for a *TypeError.
func (e *TypeError) Is(target error) bool { return target == ErrBadType }
