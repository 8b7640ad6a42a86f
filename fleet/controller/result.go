package controller

import (
	"errors"
	"time"
)

// Result is what a reconcile asks of the work queue once it succeeded
// (controller-runtime's reconcile.Result): nothing, or another pass after
// RequeueAfter. The handler decides what happens next, not the reconciler
// (STYLE.md §15).
type Result struct {
	// RequeueAfter > 0 reconciles the device again after that long (it is
	// online and behind its desired document: the document is published
	// again if it is still behind then).
	RequeueAfter time.Duration
}

// terminalError is an error a retry cannot fix.
type terminalError struct{ err error }

func (e terminalError) Error() string { return e.err.Error() }
func (e terminalError) Unwrap() error { return e.err }

// TerminalError marks err as one retrying cannot fix (controller-runtime's
// reconcile.TerminalError): the queue logs it and does not retry; the
// device is reconciled again only when something queues it (a change to
// its assignments, its reports, its registry entry). nil stays nil.
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

// IsTerminal reports whether err, or an error it wraps, is a TerminalError.
func IsTerminal(err error) bool {
	var t terminalError
	return errors.As(err, &t)
}
