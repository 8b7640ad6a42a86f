//go:build !chorus_agent

package main

import (
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

// TestTuneGatewayGC: the gateway collects at gatewayGCPercent unless the
// operator set GOGC, which is left as the runtime applied it.
func TestTuneGatewayGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	t.Setenv("GOGC", "")
	tuneGatewayGC()
	if got := debug.SetGCPercent(100); got != gatewayGCPercent {
		t.Fatalf("GOGC unset: GC percent %d, want %d", got, gatewayGCPercent)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // what the runtime did at start with GOGC=80
	tuneGatewayGC()
	if got := debug.SetGCPercent(100); got != 80 {
		t.Fatalf("GOGC=80: GC percent %d, want 80 kept", got)
	}
}

// TestApplyMemoryLimit: memory_limit sets the runtime's soft limit, bad input
// is refused naming the form and changes nothing, and GOMEMLIMIT wins.
func TestApplyMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	log := slog.New(slog.DiscardHandler)

	t.Setenv("GOMEMLIMIT", "")
	if err := applyMemoryLimit("300MiB", log); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("memory_limit 300MiB: limit %d", got)
	}
	err := applyMemoryLimit("300M", log)
	if err == nil || !strings.Contains(err.Error(), "MiB") || !strings.Contains(err.Error(), "--memory-limit") {
		t.Fatalf("300M: err %v", err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("a refused setting changed the limit to %d", got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if err := applyMemoryLimit("100MiB", log); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("GOMEMLIMIT set: limit changed to %d", got)
	}
}
