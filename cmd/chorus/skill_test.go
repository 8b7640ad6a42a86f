package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/skillcred"
	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestSkillExampleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no name", args: []string{"skill", "example"}, want: "accepts 1 arg"},
		{name: "unknown", args: []string{"skill", "example", "nope"}, want: "unknown (want one of hello, screen, weather)"},
		{name: "not under the agent", args: []string{"skill", "example", "hello"}, want: "missing CHORUS_MQTT_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			a := newApp(&stdout, &stderr, func(string) string { return "" })
			if code := a.execute(context.Background(), tt.args); code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestSkillExampleRuns runs `chorus skill example hello` in-process with the
// environment the agent would give it, sees it announce readiness, and stops
// it as SIGTERM would (its context ends): exit code 0.
func TestSkillExampleRuns(t *testing.T) {
	t.Parallel()
	const dev, skill = "kitchen", "hello.chorus"
	d := brokertest.NewDevice(t, dev)
	b := brokertest.Start(t, broker.Config{}, d.Account)
	agent := brokertest.MustConnect(t, b.Addr(), dev, d.Secret, brokertest.ConnectOptions{ClientID: "agent", CleanStart: true})
	filter, _ := topic.BusFilter(dev)
	agent.Sub(t, filter)
	prefix, _ := topic.BusPrefix(dev)
	env := map[string]string{
		"CHORUS_MQTT_URL": b.URL(), "CHORUS_DEVICE": dev, "CHORUS_SKILL_ID": skill, "CHORUS_BUS_PREFIX": prefix,
		"CHORUS_USERNAME": skillcred.Username(dev, skill), "CHORUS_PASSWORD": skillcred.Mint(d.Key, 1, dev, skill),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	a := newApp(&stdout, &stderr, func(k string) string { return env[k] })
	code := make(chan int, 1)
	go func() { code <- a.execute(ctx, []string{"skill", "example", "hello"}) }()

	ready, _ := topic.Bus(dev, "chorus.skill.ready")
	m, err := envelope.Decode(agent.Expect(t, ready, 10*time.Second).Payload)
	if err != nil || m.Data["skill_id"] != skill {
		t.Fatalf("ready = %+v (%v), want skill_id %s", m, err, skill)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code = %d, want 0; stderr %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("skill example did not stop")
	}
}
