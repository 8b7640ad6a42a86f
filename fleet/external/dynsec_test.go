package external

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/mosquittosync"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/poll"
)

func TestDesiredSkillUsers(t *testing.T) {
	for _, c := range []struct {
		name, topic, payload string
		want                 []string
	}{
		{"two skills", "chorus/v1/pi-1/desired", `{"version":3,"skills":{"b.two":{},"a.one":{}}}`,
			[]string{"skill:pi-1:a.one", "skill:pi-1:b.two"}},
		{"no skills", "chorus/v1/pi-1/desired", `{"version":1,"skills":{}}`, nil},
		{"cleared", "chorus/v1/pi-1/desired", ``, nil},
		{"another topic", "chorus/v1/pi-1/skills", `{"skills":{"a.one":{}}}`, nil},
		{"not JSON", "chorus/v1/pi-1/desired", `{`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := desiredSkillUsers(broker.Message{Topic: c.topic, Payload: []byte(c.payload)})
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// The gate before a desired document does not hold a reconcile worker when
// waiting cannot help: while the sync's last pass failed (the embedded
// broker has no dynamic-security plugin, so nothing answers), and once the
// sync closes with the gateway, here in the middle of a slow pass.
func TestDynsecGateReturnsAtOnce(t *testing.T) {
	b := brokertest.Start(t, broker.Config{})
	for _, c := range []struct {
		name    string
		desired func(context.Context) ([]mosquittosync.Client, error)
		then    func(*mosquittosync.Syncer)
	}{
		{"sync failing", func(context.Context) ([]mosquittosync.Client, error) { return nil, nil },
			func(s *mosquittosync.Syncer) {
				poll.Until(t, "a failed pass", 10*time.Second, func() bool { return !s.Healthy() })
			}},
		{"gateway stopping", func(ctx context.Context) ([]mosquittosync.Client, error) { <-ctx.Done(); return nil, ctx.Err() },
			func(s *mosquittosync.Syncer) { time.AfterFunc(50*time.Millisecond, s.Close) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := bus.Inline(b)
			defer tr.Close()
			s, err := mosquittosync.New(mosquittosync.Config{Transport: tr, Desired: c.desired,
				Debounce: time.Millisecond, Timeout: 50 * time.Millisecond, Resync: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c.then(s)
			start := time.Now()
			if awaitSkillClients(s, []string{"skill:pi-1:a.one"}) {
				t.Fatal("gate passed: Mosquitto holds no skill client")
			}
			if d := time.Since(start); d > dynsecGate/3 {
				t.Errorf("gate held the publish %v", d)
			}
		})
	}
}
