package brokerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokerbench"
)

// The attack benchmark's smoke test: every phase runs and measures, and each
// attack was met by its limit. The ratios are measured by `chorus bench
// attack` (docs/benchmarks.md), not asserted here: a timed assertion on a
// shared 2-core machine would be a flaky test, not a measurement.
func TestAttackSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := brokerbench.Attack(ctx, brokerbench.AttackConfig{RoundTrips: 30, Warmup: 300 * time.Millisecond, Silent: 300,
		QueueBytes:  1 << 20, // the stuck subscriber's queue fills within the short phase
		MachineLoad: func() string { return "1.00 2.00 3.00" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Load != "1.00 2.00 3.00" {
		t.Errorf("load %q, want the MachineLoad reading", rep.Load)
	}
	if len(rep.Phases) != 4 {
		t.Fatalf("phases: %+v", rep.Phases)
	}
	for _, p := range rep.Phases {
		if p.P50Ms <= 0 || p.RatioP50 <= 0 {
			t.Fatalf("phase %s measured nothing: %+v", p.Name, p)
		}
		t.Logf("%-16s p50 %.2f ms (%.2fx idle), p99 %.2f ms (%.2fx)", p.Name, p.P50Ms, p.RatioP50, p.P99Ms, p.RatioP99)
	}
	st := rep.Stats
	if st.PublishesThrottled == 0 || st.ConnectionsOverLimit == 0 || st.PreauthClosed == 0 || st.SlowClientsDisconnected == 0 {
		t.Fatalf("an attack met no limit: %+v", st)
	}
}
