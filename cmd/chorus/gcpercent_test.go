package main

import (
	"runtime/debug"
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
