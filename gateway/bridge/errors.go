package bridge

import "errors"

// Reasons a message does not cross. Inbound and Outbound return them
// wrapped; the relay counts and logs them.
var (
	ErrTwin         = errors.New("compat twin: each bus makes its own")
	ErrNotAllowed   = errors.New("type not allowed by the route")
	ErrNotAddressed = errors.New("not addressed to the participant")
	ErrPollFiltered = errors.New("poll-family message for a participant hosting no skill in its session")
	ErrRateLimited  = errors.New("route rate limit exceeded")
	ErrOffline      = errors.New("participant offline past the grace period")
)

// Note is something the rules corrected in a message that crossed: a forged
// source, a missing or wrong-typed session. The relay logs each at WARN.
type Note struct {
	Field string // the context path, e.g. "context.session"
	What  string // what was wrong and what was done
}
