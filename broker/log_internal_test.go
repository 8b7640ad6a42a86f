package broker

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestMochiPeerGoneIsDebug: mochi's warning for a packet error that only
// says the client went away (a skill stopping while the broker writes) is
// a debug line; any other packet error stays a warning (issue 16 §8).
func TestMochiPeerGoneIsDebug(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	tests := []struct {
		name      string
		debug     bool
		err       error
		wantLevel string // "" = not logged
	}{
		{"reset at info", false, reset, ""},
		{"reset at debug", true, reset, "level=DEBUG"},
		{"broken pipe", false, fmt.Errorf("write: %w", syscall.EPIPE), ""},
		{"protocol violation", false, errors.New("malformed packet"), "level=WARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := slog.LevelInfo
			if tc.debug {
				level = slog.LevelDebug
			}
			log := mochiLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})))
			log.Warn(mochiPacketError, "error", tc.err, "client", "skill:pi-1:hello")
			got := buf.String()
			if tc.wantLevel == "" && got != "" || tc.wantLevel != "" && !strings.Contains(got, tc.wantLevel) {
				t.Fatalf("logged %q, want level %q", got, tc.wantLevel)
			}
		})
	}
}
