package brokerbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Spread summarises one figure measured over several rounds: its median and
// the smallest and largest value seen. On a shared 2-core machine two runs of
// one binary minutes apart differ by ±0.3 in a broker ratio (issue 19), so a
// single run's ratio says little; the median of alternated rounds, with its
// spread next to it, is what docs/benchmarks.md quotes.
type Spread struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"` // in round order
}

// Summarize returns the median, minimum and maximum of vs (the mean of the
// two middle values for an even count). An empty vs gives the zero Spread.
func Summarize(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[len(s)-1], Values: slices.Clone(vs)}
}

// Ratio is the subject's figure divided by the anchor's, per round, for one
// load.
type Ratio struct {
	Subject    string  `json:"subject"`
	Anchor     string  `json:"anchor"`
	QoS        byte    `json:"qos"`
	FanOut     int     `json:"fan_out"`
	Rate       float64 `json:"target_rate,omitempty"`
	Deliveries Spread  `json:"deliveries_per_s_ratio"`
	// SubjectLoss and AnchorLoss are the loss percentages over the rounds.
	SubjectLoss Spread `json:"subject_loss_pct"`
	AnchorLoss  Spread `json:"anchor_loss_pct"`
	// SubjectRate and AnchorRate are the deliveries per second over the rounds.
	SubjectRate Spread `json:"subject_deliveries_per_s"`
	AnchorRate  Spread `json:"anchor_deliveries_per_s"`
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Rounds  int      `json:"rounds"`
	Results []Result `json:"results"` // every run, in the order they ran
	Ratios  []Ratio  `json:"ratios"`
}

// CompareConfig says what Compare runs.
type CompareConfig struct {
	Targets []Target
	Loads   []Load
	// Rounds is how many times every load runs on every target (at least 3).
	Rounds int
	// Pairs are the ratios to report: {subject, anchor} target names.
	Pairs [][2]string
	// Progress, when set, is called after every run.
	Progress func(round int, l Load, r Result)
}

// Compare runs every load on every target Rounds times, alternating the
// brokers: within a round each load runs on every target back to back, and
// the order of the targets rotates from one round to the next, so no broker
// always runs first (on a warm cache, or right after another broker's
// garbage) or always meets the same phase of another process's load. It
// reports, per load and pair, the median ratio of the subject's deliveries
// per second to the anchor's, each ratio taken within one round.
func Compare(ctx context.Context, cfg CompareConfig) (Comparison, error) {
	if cfg.Rounds < 3 {
		return Comparison{}, fmt.Errorf("compare: %d rounds; at least 3 are needed for a median with a spread", cfg.Rounds)
	}
	if len(cfg.Targets) == 0 || len(cfg.Loads) == 0 {
		return Comparison{}, errors.New("compare: no targets or no loads")
	}
	names := map[string]bool{}
	for _, t := range cfg.Targets {
		names[t.Name] = true
	}
	for _, p := range cfg.Pairs {
		if !names[p[0]] || !names[p[1]] {
			return Comparison{}, fmt.Errorf("compare: pair %s/%s names a target not in the run", p[0], p[1])
		}
	}
	cmp := Comparison{Rounds: cfg.Rounds}
	// byRound[load][round][target] = result
	byRound := make([][]map[string]Result, len(cfg.Loads))
	for li := range cfg.Loads {
		byRound[li] = make([]map[string]Result, cfg.Rounds)
	}
	for round := range cfg.Rounds {
		order := rotate(cfg.Targets, round)
		for li, l := range cfg.Loads {
			got := map[string]Result{}
			for _, t := range order {
				r, err := RunLoad(ctx, t, l)
				if err != nil {
					return cmp, fmt.Errorf("round %d: %w", round+1, err)
				}
				if cfg.Progress != nil {
					cfg.Progress(round, l, r)
				}
				cmp.Results = append(cmp.Results, r)
				got[t.Name] = r
			}
			byRound[li][round] = got
		}
	}
	for li, l := range cfg.Loads {
		for _, p := range cfg.Pairs {
			cmp.Ratios = append(cmp.Ratios, ratioOf(p, l, byRound[li]))
		}
	}
	return cmp, nil
}

// rotate returns ts starting at index k mod len(ts).
func rotate(ts []Target, k int) []Target {
	k %= len(ts)
	return append(slices.Clone(ts[k:]), ts[:k]...)
}

// ratioOf builds one pair's Ratio from the rounds' results; a round in which
// the anchor delivered nothing gives no ratio.
func ratioOf(p [2]string, l Load, rounds []map[string]Result) Ratio {
	var ratios, sLoss, aLoss, sRate, aRate []float64
	for _, got := range rounds {
		s, a := got[p[0]], got[p[1]]
		sLoss, aLoss = append(sLoss, s.LossPct), append(aLoss, a.LossPct)
		sRate, aRate = append(sRate, s.DelPerSec), append(aRate, a.DelPerSec)
		if a.DelPerSec > 0 {
			ratios = append(ratios, s.DelPerSec/a.DelPerSec)
		}
	}
	return Ratio{Subject: p[0], Anchor: p[1], QoS: l.QoS, FanOut: l.FanOut, Rate: l.Rate,
		Deliveries: Summarize(ratios), SubjectLoss: Summarize(sLoss), AnchorLoss: Summarize(aLoss),
		SubjectRate: Summarize(sRate), AnchorRate: Summarize(aRate)}
}
