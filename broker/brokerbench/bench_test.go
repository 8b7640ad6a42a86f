package brokerbench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// Run with a tiny load, --nostore and an anchor (a second bare mochi given
// by URL): every broker runs every round, the ratios are the documented
// pairs in order, the load is read before and after, and the notes end
// with Chorus's counters.
func TestRunComparesTheBrokers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound, not the expected time (a few seconds unloaded)
	defer cancel()
	anchor, err := StartBareMochi()
	if err != nil {
		t.Fatal(err)
	}
	defer anchor.Close()
	loads, lines := 0, 0
	rep, err := Run(ctx, Config{MQTTURL: "mqtt://" + anchor.Addr, NoStore: true,
		Loads:       []Load{{QoS: 1, FanOut: 2, Messages: 20}},
		MachineLoad: func() string { loads++; return "load" + string(rune('0'+loads)) },
		Progress:    func(string, ...any) { lines++ }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 3 || len(rep.Results) != 12 || lines != 12 {
		t.Fatalf("rounds %d, results %d, progress lines %d; want 3, 12 (4 brokers × 3 rounds), 12", rep.Rounds, len(rep.Results), lines)
	}
	var pairs []string
	for _, r := range rep.Ratios {
		pairs = append(pairs, r.Subject+"/"+r.Anchor)
	}
	if want := []string{"chorus/" + AnchorName, "chorus/mochi-bare", "chorus-nostore/mochi-bare"}; !slices.Equal(pairs, want) {
		t.Errorf("ratios %v, want %v", pairs, want)
	}
	for _, r := range rep.Results {
		if r.Delivered != 40 {
			t.Errorf("%s delivered %d of 40 at QoS 1", r.Broker, r.Delivered)
		}
	}
	if rep.Load != "load1" || rep.LoadEnd != "load2" {
		t.Errorf("load %q → %q, want load1 → load2", rep.Load, rep.LoadEnd)
	}
	if last := rep.Notes[len(rep.Notes)-1]; !strings.HasPrefix(last, "chorus broker counters: ") || strings.HasPrefix(last, "chorus broker counters: 0 received") {
		t.Errorf("last note %q, want Chorus's broker counters", last)
	}
}

// Fewer than 3 rounds are refused before any broker starts; the standard
// loads are docs/benchmarks.md's seven, scaled.
func TestRunDefaults(t *testing.T) {
	if _, err := Run(context.Background(), Config{Rounds: 2}); err == nil || !strings.Contains(err.Error(), "2 rounds") {
		t.Errorf("Run with 2 rounds: %v, want a refusal", err)
	}
	loads := DefaultLoads(0.5)
	if len(loads) != 7 || loads[0].Messages != 20000 || loads[2].Messages != 500 || loads[6].Rate != 10000 || loads[6].Messages != 10000 {
		t.Errorf("DefaultLoads(0.5) = %+v", loads)
	}
}
