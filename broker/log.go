package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
)

// quieter raises a handler's minimum level: mochi logs every hook and
// listener at info, which is noise in a gateway's log; its warnings and
// errors still come through, and everything does at debug.
type quieter struct {
	slog.Handler
	min slog.Level
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= q.min && q.Handler.Enabled(ctx, l)
}

// mochiPacketError is the message mochi logs, at warn, for any error while
// it processes a client's packet (broker/mochi server.go receivePacket).
const mochiPacketError = "error processing packet"

// Handle logs r, except that a packet error which only says the client is
// gone (reset, broken pipe, closed, EOF: a client that stops while the
// broker writes to it, as every skill does when its agent stops) is a
// debug record, not a warning: a clean Ctrl-C ends without a WARN
// (issue 16 §8).
func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && r.Message == mochiPacketError && peerGone(r) {
		if slog.LevelDebug < q.min {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

// peerGone reports whether r's "error" attribute says the connection's
// other end went away.
func peerGone(r slog.Record) bool {
	gone := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "error" {
			gone = errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
				errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
			return false
		}
		return true
	})
	return gone
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(as), q.min}
}

func (q quieter) WithGroup(name string) slog.Handler {
	return quieter{q.Handler.WithGroup(name), q.min}
}

func mochiLogger(l *slog.Logger) *slog.Logger {
	min := slog.LevelWarn
	if l.Enabled(context.Background(), slog.LevelDebug) {
		min = slog.LevelDebug
	}
	return slog.New(quieter{l.Handler(), min}).With("component", "mochi")
}
