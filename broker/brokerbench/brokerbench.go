// Package brokerbench is the project's MQTT load generator (no Go MQTT
// benchmark tool is installable here, go-deps.md §5): publishers and
// subscribers on paho.golang over plain net.Conn, measuring publish→deliver
// throughput and latency through any MQTT 5 broker, and the two brokers it
// compares against each other: Chorus's (with its auth, ACL, limits and
// store hooks) and a bare mochi server with no hooks but AllowHook. Run is
// `chorus bench broker` (RunLoad one load on one broker, Compare the rounds),
// Attack is `chorus bench attack`.
package brokerbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// Topic is the topic every scenario publishes on: a bus topic, so on
// Chorus's broker the ACL, the payload limits and the JSON depth check run
// on every publish and every delivery.
const Topic = "chorus/v1/benchdev/bus/bench"

// Target is one broker to load.
type Target struct {
	Name string
	Addr string // host:port
	// Login returns the credentials of client i of role "pub" or "sub"
	// (empty for an anonymous broker).
	Login func(role string, i int) (user, pass string)
}

// Load is one scenario.
type Load struct {
	QoS        byte
	FanOut     int     // subscribers
	Messages   int     // published in all
	Publishers int     // connections publishing, each synchronously at QoS 1 (4)
	Rate       float64 // total publish rate, msg/s; 0 = as fast as possible
	Payload    int     // bytes (64)
	Drain      time.Duration
}

// Result is one scenario on one broker.
type Result struct {
	Broker     string  `json:"broker"`
	QoS        byte    `json:"qos"`
	FanOut     int     `json:"fan_out"`
	Rate       float64 `json:"target_rate,omitempty"`
	Published  int     `json:"published"`
	Expected   int     `json:"expected_deliveries"`
	Delivered  int64   `json:"delivered"`
	Seconds    float64 `json:"seconds"`
	PubPerSec  float64 `json:"publish_per_s"`
	DelPerSec  float64 `json:"deliver_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	LossPct    float64 `json:"loss_pct"`
	PubErrors  int64   `json:"publish_errors"`
	ErrorFirst string  `json:"error,omitempty"`
}

// prefix is the payload's start; the send time follows as 19 digits, so a
// subscriber reads it without decoding JSON.
const prefix = `{"type":"bench","data":{"t":`

func payload(size int, t time.Time) []byte {
	b := make([]byte, 0, max(size, len(prefix)+40))
	b = append(b, prefix...)
	b = append(b, fmt.Sprintf("%019d", t.UnixNano())...)
	b = append(b, `,"pad":"`...)
	for len(b) < size-3 {
		b = append(b, 'x')
	}
	return append(b, `"}}`...)
}

func sentAt(p []byte) (time.Time, bool) {
	if len(p) < len(prefix)+19 {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(string(p[len(prefix):len(prefix)+19]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// RunLoad runs one scenario against t.
func RunLoad(ctx context.Context, t Target, l Load) (Result, error) {
	if l.Publishers <= 0 {
		l.Publishers = 4
	}
	if l.Payload <= 0 {
		l.Payload = 64
	}
	if l.Drain <= 0 {
		l.Drain = 3 * time.Second
	}
	res := Result{Broker: t.Name, QoS: l.QoS, FanOut: l.FanOut, Rate: l.Rate, Expected: l.Messages * l.FanOut}
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	rec := &recorder{lat: make([]time.Duration, 0, res.Expected)}
	var clients []*paho.Client
	defer func() {
		for _, c := range clients {
			_ = c.Disconnect(&paho.Disconnect{})
		}
	}()
	for i := range l.FanOut {
		c, err := dial(ctx, t, "sub", i, "bs"+run+"-"+strconv.Itoa(i), rec.receive)
		if err != nil {
			return res, err
		}
		clients = append(clients, c)
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: Topic, QoS: l.QoS}}}); err != nil {
			return res, fmt.Errorf("%s: subscribe: %w", t.Name, err)
		}
	}
	pubs := make([]*paho.Client, l.Publishers)
	for i := range pubs {
		c, err := dial(ctx, t, "pub", i, "bp"+run+"-"+strconv.Itoa(i), nil)
		if err != nil {
			return res, err
		}
		pubs[i], clients = c, append(clients, c)
	}
	start := time.Now()
	res.Published, res.PubErrors, res.ErrorFirst = publishAll(ctx, pubs, l, start)
	pubDone := time.Since(start)
	res.Expected = res.Published * l.FanOut
	rec.wait(ctx, int64(res.Expected), l.Drain)
	el := rec.lastAt().Sub(start)
	if el <= 0 {
		el = pubDone
	}
	res.Seconds = el.Seconds()
	res.PubPerSec = float64(res.Published) / pubDone.Seconds()
	res.Delivered = rec.n.Load()
	res.DelPerSec = float64(res.Delivered) / el.Seconds()
	if res.Expected > 0 {
		res.LossPct = 100 * float64(int64(res.Expected)-res.Delivered) / float64(res.Expected)
	}
	res.P50Ms, res.P99Ms, res.MaxMs = rec.percentiles()
	return res, nil
}

func dial(ctx context.Context, t Target, role string, i int, id string, onMsg func(*paho.Publish)) (*paho.Client, error) {
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s: dial: %w", t.Name, err)
	}
	cfg := paho.ClientConfig{Conn: conn, ClientID: id}
	if onMsg != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			onMsg(pr.Packet)
			return true, nil
		}}
	}
	c := paho.NewClient(cfg)
	cp := &paho.Connect{KeepAlive: 60, ClientID: id, CleanStart: true}
	if t.Login != nil {
		if u, p := t.Login(role, i); u != "" {
			cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = u, true, []byte(p), true
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Connect(cctx, cp); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%s: connect %s: %w", t.Name, role, err)
	}
	return c, nil
}

// publishAll spreads l.Messages over the publishers, paced at l.Rate when set.
func publishAll(ctx context.Context, pubs []*paho.Client, l Load, start time.Time) (int, int64, string) {
	var (
		wg      sync.WaitGroup
		sent    atomic.Int64
		errs    atomic.Int64
		errOnce sync.Once
		first   string
	)
	per := l.Messages / len(pubs)
	for i, c := range pubs {
		n := per
		if i == 0 {
			n += l.Messages - per*len(pubs)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				if l.Rate > 0 { // message k of publisher i is due at (k*P+i)/rate
					due := start.Add(time.Duration(float64(k*len(pubs)+i) / l.Rate * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				if ctx.Err() != nil {
					return
				}
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := c.Publish(pctx, &paho.Publish{Topic: Topic, QoS: l.QoS, Payload: payload(l.Payload, time.Now())})
				cancel()
				if err != nil {
					errs.Add(1)
					errOnce.Do(func() { first = err.Error() })
					continue
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(sent.Load()), errs.Load(), first
}

// recorder counts deliveries and keeps their latencies.
type recorder struct {
	n    atomic.Int64
	mu   sync.Mutex // guards lat and last
	lat  []time.Duration
	last time.Time
}

func (r *recorder) receive(p *paho.Publish) {
	now := time.Now()
	t, ok := sentAt(p.Payload)
	r.mu.Lock()
	if ok {
		r.lat = append(r.lat, now.Sub(t))
	}
	r.last = now
	r.mu.Unlock()
	r.n.Add(1)
}

func (r *recorder) lastAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// wait returns once want deliveries arrived, or nothing arrived for idle.
func (r *recorder) wait(ctx context.Context, want int64, idle time.Duration) {
	prev, since := r.n.Load(), time.Now()
	for r.n.Load() < want && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		if n := r.n.Load(); n != prev {
			prev, since = n, time.Now()
		} else if time.Since(since) > idle {
			return
		}
	}
}

func (r *recorder) percentiles() (p50, p99, mx float64) {
	r.mu.Lock()
	ds := slices.Clone(r.lat)
	r.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(p float64) float64 {
		i := max(0, min(int(float64(len(ds))*p/100+0.5)-1, len(ds)-1))
		return float64(ds[i].Microseconds()) / 1000
	}
	return at(50), at(99), float64(ds[len(ds)-1].Microseconds()) / 1000
}

// ParseURL turns mqtt://[user:pass@]host:port into a Target whose every
// client logs in with those credentials.
func ParseURL(name, raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "mqtt" || u.Host == "" {
		return Target{}, errors.New("--mqtt-url: want mqtt://[user:pass@]host:port (no TLS)")
	}
	t := Target{Name: name, Addr: u.Host}
	if u.User != nil {
		user := u.User.Username()
		pass, _ := u.User.Password()
		t.Login = func(string, int) (string, string) { return user, pass }
	}
	return t, nil
}
