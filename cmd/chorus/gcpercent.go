package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/chorus-edge/chorus/configs"
)

// gatewayGCPercent is the gateway's garbage-collection target when the
// operator has not set GOGC (docs/benchmarks.md, "Memory at 10,000
// devices"). A gateway's live heap is mostly long-lived per-connection state
// (mochi's clients, retained messages), so Go's default of 100 lets the heap
// grow to twice that between collections. At 50, the 10,000-device run's
// peak RSS fell from 1,439 to 1,097 MiB with no loss of convergence time;
// the agent keeps Go's default (its heap is a few MiB).
const gatewayGCPercent = 50

// tuneGatewayGC applies gatewayGCPercent unless GOGC is set in the
// environment, which always wins (the runtime has already applied it).
func tuneGatewayGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gatewayGCPercent)
	}
}

// applyMemoryLimit sets the Go runtime's soft memory limit from the config's
// memory_limit (or --memory-limit), unless GOMEMLIMIT is set in the
// environment, which wins as GOGC does (docs/configuration.md, "Memory
// limit"). It says which applies.
func applyMemoryLimit(setting string, log *slog.Logger) error {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		if setting != "" {
			log.Info("memory limit: GOMEMLIMIT from the environment wins over memory_limit", "GOMEMLIMIT", env, "memory_limit", setting)
		}
		return nil
	}
	n, set, err := configs.ParseMemoryLimit(setting)
	if err != nil {
		return fmt.Errorf("memory_limit / --memory-limit %w", err)
	}
	if set {
		debug.SetMemoryLimit(n)
		log.Info("memory limit set", "bytes", n, "memory_limit", setting)
	}
	return nil
}
