package controller

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// scrapeTimeout bounds the store queries of one scrape.
const scrapeTimeout = 10 * time.Second

// skillStates are gateway/state's skill states; any other value a device
// reports is counted as "other", so a device cannot grow the label set.
var skillStates = stateLabels()

func stateLabels() []string {
	out := make([]string, len(state.SkillStates))
	for i, s := range state.SkillStates {
		out[i] = string(s)
	}
	return out
}

var (
	rolloutStates = []fleet.RolloutState{fleet.RolloutQueued, fleet.RolloutInProgress, fleet.RolloutPaused,
		fleet.RolloutSucceeded, fleet.RolloutFailed, fleet.RolloutAborted, fleet.RolloutCanceled}
	execStates = []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress, fleet.ExecSucceeded,
		fleet.ExecFailed, fleet.ExecTimedOut, fleet.ExecCanceled}
)

// metrics is the controller's Prometheus registry (no global registry, so
// two controllers in one process, as in tests, never collide). The event
// series (reconcile latency, desired documents published) are updated as
// things happen; everything else is read from the store and the broker at
// scrape time by fleetCollector.
type metrics struct {
	reg       *prometheus.Registry
	reconcile *prometheus.HistogramVec
	desired   prometheus.Counter
}

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chorus_reconcile_duration_seconds",
			Help:    "Time one Reconcile pass over one device took, by result (ok, error).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"result"}),
		desired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chorus_desired_published_total",
			Help: "Desired documents the controller published (retained, chorus/v1/<device>/desired).",
		}),
	}
	m.reconcile.WithLabelValues("ok") // both series exist from the first scrape
	m.reconcile.WithLabelValues("error")
	m.reg.MustRegister(m.reconcile, m.desired, newFleetCollector(c))
	if c.cfg.BrokerStats != nil {
		m.reg.MustRegister(newBrokerCollector(c.cfg.BrokerStats))
	}
	return m
}

// Metrics is what GET /metrics serves: the fleet's devices, skills,
// rollouts and executions by state, the broker's counters (when
// Config.BrokerStats is set), reconcile latency and desired documents
// published. A scrape costs one ListDevices and one ListRollouts (one
// read transaction counting each rollout's executions); skills reports are
// decoded only when they changed since the last scrape. With 10k devices
// of 10 skills each that is about 0.2 s of one core per scrape (0.5 s for
// the first), so the default 15 s scrape interval or slower suits it.
func (c *Controller) Metrics() prometheus.Gatherer { return c.metrics.reg }

// observeReconcile records one Reconcile pass that began at start.
func (m *metrics) observeReconcile(start, end time.Time, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.reconcile.WithLabelValues(result).Observe(end.Sub(start).Seconds())
}

// fleetCollector reads the store at scrape time, so the numbers are the
// registry's, not a cache that could drift from it. Decoding every skills
// report is most of a scrape's cost and reports change far less often than
// they are scraped, so each device's state counts are memoised by its
// report's bytes (compared, never trusted blindly).
type fleetCollector struct {
	c                                *Controller
	devices, skills, rollouts, execs *prometheus.Desc

	mu      sync.Mutex            // guards tallies; held for the swap only
	tallies map[string]skillTally // device -> its last report's skill states
}

func newFleetCollector(c *Controller) *fleetCollector {
	return &fleetCollector{
		c: c,
		devices: prometheus.NewDesc("chorus_devices", "Registered devices by presence (online, offline).",
			[]string{"state"}, nil),
		skills: prometheus.NewDesc("chorus_skills", "Skills across the fleet by state, from each device's last skills report.",
			[]string{"state"}, nil),
		rollouts: prometheus.NewDesc("chorus_rollouts", "Rollouts by state.", []string{"state"}, nil),
		execs: prometheus.NewDesc("chorus_rollout_executions", "Rollout executions (one per device and rollout) by state.",
			[]string{"state"}, nil),
	}
}

func (f *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.devices
	ch <- f.skills
	ch <- f.rollouts
	ch <- f.execs
}

// Collect runs one ListDevices and one ListRollouts. A failed query turns
// its series into an invalid metric, which the HTTP handler reports while
// still serving the rest.
func (f *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	f.collectDevices(ctx, ch)
	f.collectRollouts(ctx, ch)
}

func (f *fleetCollector) collectDevices(ctx context.Context, ch chan<- prometheus.Metric) {
	devs, err := f.c.store.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(f.devices, err)
		ch <- prometheus.NewInvalidMetric(f.skills, err)
		return
	}
	var online, offline float64
	skills := map[string]float64{"other": 0}
	for _, s := range skillStates {
		skills[s] = 0
	}
	prev := f.takeTallies()
	next := make(map[string]skillTally, len(devs))
	for _, d := range devs {
		if d.Online {
			online++
		} else {
			offline++
		}
		t, ok := prev[d.ID]
		if !ok || !bytes.Equal(t.raw, d.Reported) {
			t = tallySkills(d.Reported)
		}
		next[d.ID] = t
		for _, s := range t.states {
			skills[s]++
		}
	}
	f.putTallies(next)
	ch <- prometheus.MustNewConstMetric(f.devices, prometheus.GaugeValue, online, "online")
	ch <- prometheus.MustNewConstMetric(f.devices, prometheus.GaugeValue, offline, "offline")
	for state, n := range skills {
		ch <- prometheus.MustNewConstMetric(f.skills, prometheus.GaugeValue, n, state)
	}
}

// skillTally is one device's skills report reduced to the state of each skill,
// remembered with the report it came from.
type skillTally struct {
	raw    []byte
	states []string
}

// tallySkills decodes only skills[].state; a state outside skillStates
// is "other". A report that does not decode counts no skills (the store
// validated it when it was stored).
func tallySkills(raw []byte) skillTally {
	t := skillTally{raw: raw}
	r, err := state.ParseSkills(raw)
	if len(raw) == 0 || err != nil {
		return t
	}
	t.states = make([]string, len(r.Skills))
	for i, s := range r.Skills {
		t.states[i] = "other"
		if slices.Contains(skillStates, string(s.State)) {
			t.states[i] = string(s.State)
		}
	}
	return t
}

// takeTallies hands the last scrape's tallies to this one; a concurrent
// scrape finds none and decodes every report itself.
func (f *fleetCollector) takeTallies() map[string]skillTally {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tallies
	f.tallies = nil
	return t
}

func (f *fleetCollector) putTallies(t map[string]skillTally) {
	f.mu.Lock()
	f.tallies = t
	f.mu.Unlock()
}

func (f *fleetCollector) collectRollouts(ctx context.Context, ch chan<- prometheus.Metric) {
	rs, err := f.c.store.ListRollouts(ctx, fleet.RolloutFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(f.rollouts, err)
		ch <- prometheus.NewInvalidMetric(f.execs, err)
		return
	}
	rollouts := make(map[fleet.RolloutState]float64, len(rolloutStates))
	execs := make(map[fleet.ExecState]float64, len(execStates))
	for _, r := range rs {
		rollouts[r.State]++
		for s, n := range r.Counts {
			execs[s] += float64(n)
		}
	}
	for _, s := range rolloutStates {
		ch <- prometheus.MustNewConstMetric(f.rollouts, prometheus.GaugeValue, rollouts[s], string(s))
	}
	for _, s := range execStates {
		ch <- prometheus.MustNewConstMetric(f.execs, prometheus.GaugeValue, execs[s], string(s))
	}
}

// brokerCollector reads broker.Stats at scrape time.
type brokerCollector struct {
	stats func() broker.Stats
	descs []brokerSeries
}

type brokerSeries struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(broker.Stats) int64
}

func newBrokerCollector(stats func() broker.Stats) *brokerCollector {
	series := func(name, help string, kind prometheus.ValueType, v func(broker.Stats) int64) brokerSeries {
		return brokerSeries{prometheus.NewDesc(name, help, nil, nil), kind, v}
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	return &brokerCollector{stats: stats, descs: []brokerSeries{
		series("chorus_mqtt_clients_connected", "MQTT clients connected to the embedded broker.", gauge,
			func(s broker.Stats) int64 { return s.ClientsConnected }),
		series("chorus_mqtt_retained_messages", "Retained messages the broker holds.", gauge,
			func(s broker.Stats) int64 { return s.Retained }),
		series("chorus_mqtt_messages_received_total", "PUBLISH packets the broker received.", counter,
			func(s broker.Stats) int64 { return s.MessagesReceived }),
		series("chorus_mqtt_messages_sent_total", "PUBLISH packets the broker sent.", counter,
			func(s broker.Stats) int64 { return s.MessagesSent }),
		series("chorus_mqtt_messages_dropped_total", "Messages the broker dropped (a subscriber's queue full, expired).", counter,
			func(s broker.Stats) int64 { return s.MessagesDropped }),
		series("chorus_mqtt_received_bytes_total", "Bytes the broker received.", counter,
			func(s broker.Stats) int64 { return s.BytesReceived }),
		series("chorus_mqtt_sent_bytes_total", "Bytes the broker sent.", counter,
			func(s broker.Stats) int64 { return s.BytesSent }),
		series("chorus_mqtt_publishes_throttled_total", "Publishes refused by an account's publish rate limit.", counter,
			func(s broker.Stats) int64 { return s.PublishesThrottled }),
		series("chorus_mqtt_payloads_refused_total", "Publishes refused by a payload size, JSON depth or envelope check.", counter,
			func(s broker.Stats) int64 { return s.PayloadsRefused }),
		series("chorus_mqtt_publishes_refused_total", "Publishes refused by the ACL, a reserved type, the retain rules or a forged skill_id.", counter,
			func(s broker.Stats) int64 { return s.PublishesRefused }),
		series("chorus_mqtt_subscriptions", "Subscriptions the broker holds.", gauge,
			func(s broker.Stats) int64 { return s.Subscriptions }),
		series("chorus_mqtt_connects_refused_total", "CONNECTs refused: credentials, client id, Will or connection limit.", counter,
			func(s broker.Stats) int64 { return s.ConnectsRefused }),
		series("chorus_mqtt_connections_over_limit_total", "CONNECTs refused by an account's connection limit.", counter,
			func(s broker.Stats) int64 { return s.ConnectionsOverLimit }),
		series("chorus_mqtt_pending_connects", "Connections accepted that have not authenticated yet.", gauge,
			func(s broker.Stats) int64 { return s.PendingConnects }),
		series("chorus_mqtt_preauth_closed_total", "Connections closed before authenticating: not CONNECT, too large or too slow.", counter,
			func(s broker.Stats) int64 { return s.PreauthClosed }),
		series("chorus_mqtt_wills_refused_total", "Wills refused at CONNECT or dropped when due.", counter,
			func(s broker.Stats) int64 { return s.WillsRefused }),
		series("chorus_mqtt_subscriptions_refused_total", "Subscription filters refused by the count or length limit.", counter,
			func(s broker.Stats) int64 { return s.SubscriptionsRefused }),
		series("chorus_mqtt_slow_clients_disconnected_total", "Clients disconnected for not reading their messages.", counter,
			func(s broker.Stats) int64 { return s.SlowClientsDisconnected }),
	}}
}

func (b *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range b.descs {
		ch <- s.desc
	}
}

// Collect takes one Stats snapshot, so the series of one scrape agree.
func (b *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	st := b.stats()
	for _, s := range b.descs {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, float64(s.value(st)))
	}
}
