package agentbench

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/gateway/state"
)

// observer watches one device's retained skills report and times its
// answers to bus requests, as an operator account on the bench broker.
type observer struct {
	c      *paho.Client
	dev    string
	ready  chan time.Time // once: the first report with want skills loaded
	rescnd chan time.Time // each skillmanager.rescan.response (capacity 1)
}

func newObserver(ctx context.Context, addr, user, pass, dev string, want int) (*observer, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	o := &observer{dev: dev, ready: make(chan time.Time, 1), rescnd: make(chan time.Time, 1)}
	o.c = paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: "bench-observer",
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){o.receiver(want)}})
	cp := &paho.Connect{KeepAlive: 60, ClientID: "bench-observer", CleanStart: true, Username: user, UsernameFlag: true, Password: []byte(pass), PasswordFlag: true}
	if _, err := o.c.Connect(ctx, cp); err != nil {
		return nil, err
	}
	prefix := "chorus/v1/" + dev
	if _, err := o.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: prefix + "/skills", QoS: 1}, {Topic: prefix + "/bus/skillmanager.rescan.response", QoS: 1}}}); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// receiver stamps the rescan answers and the first skills report that lists
// want skills loaded. paho calls it from one goroutine, which owns sent.
func (o *observer) receiver(want int) func(paho.PublishReceived) (bool, error) {
	sent := false
	return func(pr paho.PublishReceived) (bool, error) {
		now := time.Now()
		if strings.HasSuffix(pr.Packet.Topic, "/bus/skillmanager.rescan.response") {
			select {
			case o.rescnd <- now:
			default:
			}
			return true, nil
		}
		if r, err := state.ParseSkills(pr.Packet.Payload); !sent && err == nil && loaded(r) >= want {
			sent = true
			o.ready <- now
		}
		return true, nil
	}
}

func loaded(r state.Skills) int {
	n := 0
	for _, s := range r.Skills {
		if s.State == state.Loaded {
			n++
		}
	}
	return n
}

// rescan asks the agent for skillmanager.rescan and times the answer.
func (o *observer) rescan(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	body := []byte(`{"type":"skillmanager.rescan","data":{},"context":{"source":"bench"}}`)
	if _, err := o.c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + o.dev + "/bus/skillmanager.rescan", QoS: 1, Payload: body}); err != nil {
		return 0, err
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case at := <-o.rescnd:
		return at.Sub(start), nil
	case <-t.C:
		return 0, errors.New("no answer to skillmanager.rescan within 30 s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (o *observer) close() { _ = o.c.Disconnect(&paho.Disconnect{}) }
