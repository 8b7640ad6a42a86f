//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// lockedBuffer is an io.Writer safe to read while a command writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// busEnv is a broker plus a data dir whose up.json points at it.
type busEnv struct {
	b       *broker.Broker
	dataDir string
	device  brokertest.Device
}

func newBusEnv(t *testing.T) *busEnv {
	t.Helper()
	e := &busEnv{dataDir: t.TempDir(), device: brokertest.NewDevice(t, "kitchen")}
	op, secret := brokertest.NewOperator(t, "ops")
	e.b = brokertest.Start(t, broker.Config{}, e.device.Account, op)
	up := configs.Up{
		MQTTURL:  "mqtt://" + e.b.Addr(),
		Operator: configs.Credential{Username: op.Username, Password: secret},
		Device:   "kitchen",
	}
	if err := configs.WriteUp(configs.UpPath(e.dataDir), up); err != nil {
		t.Fatal(err)
	}
	return e
}

type run struct {
	code           int
	stdout, stderr string
}

// chorus runs one command in-process with env as the environment.
func chorus(ctx context.Context, env map[string]string, args ...string) run {
	var out, errb lockedBuffer
	code := newApp(&out, &errb, func(k string) string { return env[k] }).execute(ctx, args)
	return run{code, out.String(), errb.String()}
}

func busCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startListen runs `chorus bus listen` until the test ends and returns its
// stdout once it has subscribed.
func startListen(t *testing.T, args ...string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- newApp(&out, &errb, func(string) string { return "" }).execute(ctx, append([]string{"bus", "listen"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("listen exited %d: %s", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("listen did not stop after its context was cancelled")
		}
	})
	poll.Until(t, "listen subscribed", 10*time.Second, func() bool { return strings.Contains(errb.String(), "bus listen: subscribed") })
	return &out
}

type printed struct {
	Device  string         `json:"device"`
	Type    string         `json:"type"`
	Data    map[string]any `json:"data"`
	Context map[string]any `json:"context"`
}

func lines(t *testing.T, s string) []printed {
	t.Helper()
	var out []printed
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var p printed
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, p)
	}
	return out
}

func TestBusSendListen(t *testing.T) {
	t.Parallel()
	e := newBusEnv(t)
	cases := []struct {
		name       string
		listenArgs []string
	}{
		{"device bus", []string{"--data-dir", e.dataDir}},
		{"one type", []string{"--data-dir", e.dataDir, "speak", "speak"}},
		{"all devices", []string{"--data-dir", e.dataDir, "--all"}},
		{"device plus", []string{"--data-dir", e.dataDir, "--device", "+", "speak"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := startListen(t, tc.listenArgs...)
			r := chorus(busCtx(t), nil, "bus", "send", "speak", "--data-dir", e.dataDir,
				"--data", `{"utterance":"hi <there>","n":1.50}`, "--context", `{"source":"cli"}`)
			if r.code != 0 {
				t.Fatalf("send exited %d: %s", r.code, r.stderr)
			}
			poll.Until(t, "listen prints", 10*time.Second, func() bool { return strings.Contains(out.String(), "\n") })
			got := lines(t, out.String())
			if len(got) != 1 {
				t.Fatalf("printed %d lines, want 1:\n%s", len(got), out.String())
			}
			p := got[0]
			if p.Device != "kitchen" || p.Type != "speak" || p.Data["utterance"] != "hi <there>" || p.Context["source"] != "cli" {
				t.Errorf("printed %+v", p)
			}
			if !strings.Contains(out.String(), `"n":1.50`) || !strings.Contains(out.String(), "<there>") {
				t.Errorf("number spelling or HTML escaping changed: %s", out.String())
			}
		})
	}
}

func TestBusRequest(t *testing.T) {
	t.Parallel()
	e := newBusEnv(t)
	ctx := busCtx(t)

	t.Run("timeout", func(t *testing.T) {
		r := chorus(ctx, nil, "bus", "request", "q.ask", "--data-dir", e.dataDir, "--timeout", "300ms")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1", r.code)
		}
		if want := "no reply of type q.ask.response from device kitchen within 300ms"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	})

	t.Run("reply", func(t *testing.T) {
		m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + e.b.Addr(), Username: "kitchen", Password: e.device.Secret})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		c, err := bus.New(bus.Config{Transport: m, Device: "kitchen"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.On("q.ask", func(ctx context.Context, d bus.Delivery) {
			resp, _ := d.Message.Response(map[string]any{"answer": 42})
			_ = c.Reply(ctx, d, resp)
		}); err != nil {
			t.Fatal(err)
		}
		r := chorus(ctx, nil, "bus", "request", "q.ask", "--data-dir", e.dataDir, "--data", `{"q":"?"}`)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		got := lines(t, r.stdout)
		if len(got) != 1 || got[0].Type != "q.ask.response" || got[0].Data["answer"] != float64(42) {
			t.Errorf("printed %q", r.stdout)
		}
	})
}

func TestBusErrors(t *testing.T) {
	t.Parallel()
	e := newBusEnv(t)
	raw := brokertest.MustConnect(t, e.b.Addr(), "kitchen", e.device.Secret, brokertest.ConnectOptions{ClientID: "watch"})
	raw.Sub(t, "chorus/v1/kitchen/bus/+")
	empty := t.TempDir()
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no up.json", nil, []string{"bus", "send", "speak", "--data-dir", empty}, "no up.json"},
		{"bad data", nil, []string{"bus", "send", "speak", "--data-dir", e.dataDir, "--data", `{"a":`}, "--data"},
		{"data not an object", nil, []string{"bus", "send", "speak", "--data-dir", e.dataDir, "--data", `[1]`}, "not a JSON object"},
		{"bad context", nil, []string{"bus", "send", "speak", "--data-dir", e.dataDir, "--context", `nope`}, "--context"},
		{"bad type", nil, []string{"bus", "send", "a/b", "--data-dir", e.dataDir}, "cannot be part of one MQTT topic level"},
		{"wrong password", nil, []string{"bus", "send", "speak", "--data-dir", e.dataDir, "--password", "wrong"}, "bad username or password"},
		{"env credentials", map[string]string{"CHORUS_MQTT_URL": "mqtt://" + e.b.Addr(), "CHORUS_USERNAME": "kitchen", "CHORUS_PASSWORD": "wrong", "CHORUS_DEVICE": "kitchen"},
			[]string{"bus", "send", "speak", "--data-dir", empty}, "bad username or password"},
		{"missing device", map[string]string{"CHORUS_MQTT_URL": "mqtt://" + e.b.Addr(), "CHORUS_USERNAME": "kitchen"},
			[]string{"bus", "send", "speak", "--data-dir", empty}, "--device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := chorus(busCtx(t), tc.env, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d stderr %q, want 1 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
	// Nothing above was sent: the next message the watcher sees is this one.
	if r := chorus(busCtx(t), nil, "bus", "send", "after", "--data-dir", e.dataDir); r.code != 0 {
		t.Fatalf("send exited %d: %s", r.code, r.stderr)
	}
	p, ok := raw.Next(10 * time.Second)
	if !ok {
		t.Fatal("watcher got nothing")
	}
	if m, err := envelope.Decode(p.Payload); err != nil || m.Type != "after" {
		t.Errorf("watcher got %s first, want the type after", p.Payload)
	}
}
