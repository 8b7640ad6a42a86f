package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// sinkBroker takes every publish and keeps none.
type sinkBroker struct{ nopBroker }

func (sinkBroker) Publish(broker.Message) error { return nil }

// BenchmarkReportReconcile is the controller's work for one device's
// skills report during an install, as the 10,000-device bench makes it
// (docs/benchmarks.md, issue 19): the inbox stores the report (applyStates)
// and the worker reconciles the device (Reconcile: desired document, Home
// Assistant topics, the in-progress execution judged). The report lists
// five local skills and the rollout's skill still loading, so the
// execution stays in progress and every pass does the same work.
func BenchmarkReportReconcile(b *testing.B) {
	const n = 256
	c, _, es := finisherEnv(b, n, nil)
	c.cfg.Broker = sinkBroker{}
	ctx := context.Background()
	msgs := make([][2]broker.Message, n)
	for i, e := range es {
		t, err := topic.Skills(e.DeviceID)
		if err != nil {
			b.Fatal(err)
		}
		for k := range msgs[i] {
			msgs[i][k] = broker.Message{Topic: t, Payload: benchReport(b, time.Unix(int64(1e9+k), 0)), Retain: true}
		}
		if _, err := c.Reconcile(ctx, e.DeviceID); err != nil { // the first pass publishes the document and the config
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d := i % n
		c.applyStates(ctx, []broker.Message{msgs[d][i/n%2]})
		if _, err := c.Reconcile(ctx, es[d].DeviceID); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// benchReport is a skills report as fleetbench's devices publish it: five
// local skills loaded and the fleet-managed "weather" loading.
func benchReport(tb testing.TB, at time.Time) []byte {
	tb.Helper()
	var skills []state.Skill
	for i := range 5 {
		skills = append(skills, state.Skill{ID: fmt.Sprintf("local%03d.bench", i), Version: "1.0.0", State: state.Loaded,
			Active: true, WaitingFor: []string{}, Requirements: []string{}, Since: at})
	}
	skills = append(skills, state.Skill{ID: "weather", Version: "1.0.0", State: state.Loading,
		WaitingFor: []string{}, Requirements: []string{}, Managed: true, Since: at})
	p, err := state.Encode(state.Skills{AppliedVersion: 1, UpdatedAt: at, Skills: skills})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
