package broker

import (
	"context"
	"log/slog"
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
