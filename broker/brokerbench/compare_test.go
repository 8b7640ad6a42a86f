package brokerbench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{0.8, 0.62, 0.98}, 0.8, 0.62, 0.98},
		{[]float64{1.2, 0.9, 1.0, 0.5}, 0.95, 0.5, 1.2}, // even: mean of the middle two
		{[]float64{0.7}, 0.7, 0.7, 0.7},
		{[]float64{3, 3, 1, 3, 2}, 3, 1, 3},
	} {
		s := Summarize(c.in)
		if !near(s.Median, c.med) || s.Min != c.min || s.Max != c.max {
			t.Errorf("Summarize(%v) = %+v, want median %v min %v max %v", c.in, s, c.med, c.min, c.max)
		}
		if !slices.Equal(s.Values, c.in) {
			t.Errorf("Summarize(%v) values %v: want the input in round order", c.in, s.Values)
		}
	}
	in := []float64{2, 1, 3}
	Summarize(in)
	if !slices.Equal(in, []float64{2, 1, 3}) {
		t.Errorf("Summarize sorted its input: %v", in)
	}
	if s := Summarize(nil); s.Median != 0 || s.Values != nil {
		t.Errorf("Summarize(nil) = %+v", s)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestRatioOfIsPerRound(t *testing.T) {
	// The ratio is taken within each round, then the median over rounds: a
	// broker that was fast in a round when the machine was quiet is compared
	// with its anchor in that same round.
	rounds := []map[string]Result{
		{"c": {DelPerSec: 100, LossPct: 1}, "m": {DelPerSec: 200}},
		{"c": {DelPerSec: 50}, "m": {DelPerSec: 50}},
		{"c": {DelPerSec: 90, LossPct: 3}, "m": {DelPerSec: 100, LossPct: 2}},
		{"c": {DelPerSec: 10}, "m": {DelPerSec: 0}}, // anchor delivered nothing: no ratio
	}
	r := ratioOf([2]string{"c", "m"}, Load{QoS: 1, FanOut: 10}, rounds)
	if !slices.Equal(r.Deliveries.Values, []float64{0.5, 1, 0.9}) || !near(r.Deliveries.Median, 0.9) ||
		r.Deliveries.Min != 0.5 || r.Deliveries.Max != 1 {
		t.Fatalf("ratios %+v", r.Deliveries)
	}
	if r.SubjectLoss.Max != 3 || r.AnchorLoss.Max != 2 || r.QoS != 1 || r.FanOut != 10 {
		t.Fatalf("ratio %+v", r)
	}
}

func TestRotateAlternatesWhoRunsFirst(t *testing.T) {
	ts := []Target{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	var firsts []string
	for round := range 4 {
		firsts = append(firsts, rotate(ts, round)[0].Name)
	}
	if strings.Join(firsts, "") != "abca" {
		t.Fatalf("first per round: %v", firsts)
	}
	if ts[0].Name != "a" {
		t.Fatal("rotate changed its input")
	}
}

func TestCompareRefusesFewerThanThreeRounds(t *testing.T) {
	_, err := Compare(context.Background(), CompareConfig{Targets: []Target{{Name: "a"}}, Loads: []Load{{}}, Rounds: 2})
	if err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Fatalf("err = %v", err)
	}
	_, err = Compare(context.Background(), CompareConfig{Targets: []Target{{Name: "a"}}, Loads: []Load{{}}, Rounds: 3,
		Pairs: [][2]string{{"a", "mosquitto"}}})
	if err == nil || !strings.Contains(err.Error(), "mosquitto") {
		t.Fatalf("err = %v", err)
	}
}

// Compare on two real brokers on loopback, with tiny loads: every round runs
// every load on both, the order alternates, and the ratio has one value per
// round. No figure is asserted.
func TestCompareAlternatesRealBrokers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := StartBareMochi()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := StartChorus("", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var order []string
	cmp, err := Compare(ctx, CompareConfig{
		Targets: []Target{b.Target, a.Target},
		Loads:   []Load{{QoS: 1, FanOut: 2, Messages: 40}},
		Rounds:  3,
		Pairs:   [][2]string{{b.Name, a.Name}},
		Progress: func(round int, _ Load, r Result) {
			order = append(order, r.Broker)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"chorus-nostore", "mochi-bare", "mochi-bare", "chorus-nostore", "chorus-nostore", "mochi-bare"}
	if !slices.Equal(order, want) {
		t.Fatalf("run order %v, want %v", order, want)
	}
	if len(cmp.Results) != 6 || len(cmp.Ratios) != 1 || len(cmp.Ratios[0].Deliveries.Values) != 3 {
		t.Fatalf("comparison %+v", cmp)
	}
	for _, r := range cmp.Results {
		if r.Delivered != 80 {
			t.Fatalf("%s delivered %d of 80 at QoS 1", r.Broker, r.Delivered)
		}
	}
}
