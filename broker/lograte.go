package broker

import (
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// logLimiter keeps a kind of log line that a peer can trigger at will (a
// refused CONNECT, a refused publish) from amplifying a flood into the log:
// at most perWindow lines per window, then only a count, which the next line
// that gets through reports as "suppressed".
type logLimiter struct {
	perWindow int
	window    time.Duration
	now       func() time.Time

	mu         sync.Mutex // guards the fields below
	start      time.Time
	n          int
	suppressed int
}

func newLogLimiter(perWindow int, window time.Duration, now func() time.Time) *logLimiter {
	return &logLimiter{perWindow: perWindow, window: window, now: now}
}

// log writes the line unless the window's budget is spent.
func (l *logLimiter) log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, suppressed := l.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	log.Log(nil, level, msg, args...) //nolint:staticcheck // slog accepts a nil context
}

func (l *logLimiter) allow() (bool, int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start, l.n = now, 0
	}
	if l.n >= l.perWindow {
		l.suppressed++
		return false, 0
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return true, s
}

// maxLoggedName is how much of a peer-chosen name (username, client id,
// topic) a log line carries.
const maxLoggedName = 64

// peerText renders a name a peer chose for a log line: at most
// maxLoggedName bytes, quoted with Go escapes so control bytes and invalid
// UTF-8 cannot forge log lines, and its full length when cut.
func peerText[T ~string | ~[]byte](v T) string {
	s := string(v)
	if len(s) <= maxLoggedName {
		return strconv.QuoteToASCII(s)
	}
	return strconv.QuoteToASCII(s[:maxLoggedName]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
