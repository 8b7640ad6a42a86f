package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// startMetrics runs a broker, a controller with the broker's counters and
// the HTTP server serving its metrics.
func startMetrics(t *testing.T) (*httpapi.Server, *controller.Controller, *broker.Broker) {
	t.Helper()
	dir := t.TempDir()
	b := brokertest.Start(t, broker.Config{})
	db, err := sqlite.Open(filepath.Join(dir, "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: db, Broker: b, ArtifactDir: filepath.Join(dir, "artifacts"),
		ValidateSkill: validateSkill, Tick: 50 * time.Millisecond, BrokerStats: b.Stats})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: ctl, Token: token,
		VerifyDevice: ctl.VerifyDevice, Metrics: ctl.Metrics()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close(context.Background())
		ctl.Close()
		db.Close()
	})
	return srv, ctl, b
}

// scrape GETs /metrics without credentials and parses it as the
// Prometheus text format.
func scrape(t *testing.T, srv *httpapi.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := do(t, srv, call{method: "GET", path: "/metrics"}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// value is the gauge or counter value of name (with label state=state when
// state is not empty); a missing series is -1.
func value(fams map[string]*dto.MetricFamily, name, state string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		if state != "" && !hasLabel(m, "state", state) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, name, val string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == val {
			return true
		}
	}
	return false
}

// total sums every series of a gauge family.
func total(fams map[string]*dto.MetricFamily, name string) float64 {
	var n float64
	for _, m := range fams[name].GetMetric() {
		n += m.GetGauge().GetValue()
	}
	return n
}

// reconciles is the number of Reconcile passes observed.
func reconciles(fams map[string]*dto.MetricFamily) uint64 {
	var n uint64
	for _, m := range fams["chorus_reconcile_duration_seconds"].GetMetric() {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

func TestMetricsMoveWithTheFleet(t *testing.T) {
	srv, ctl, b := startMetrics(t)
	ctx := context.Background()

	m := scrape(t, srv)
	for _, name := range []string{"chorus_rollouts", "chorus_rollout_executions", "chorus_skills"} {
		if got := total(m, name); got != 0 {
			t.Errorf("%s on an empty fleet = %v, want 0", name, got)
		}
	}
	if got := value(m, "chorus_devices", "offline"); got != 0 {
		t.Errorf("offline devices on an empty fleet = %v, want 0", got)
	}

	// A device added: offline until its agent announces itself.
	_, creds, err := ctl.AddDevice(ctx, "test", "kitchen", nil)
	if err != nil {
		t.Fatal(err)
	}
	m = scrape(t, srv)
	if on, off := value(m, "chorus_devices", "online"), value(m, "chorus_devices", "offline"); on != 0 || off != 1 {
		t.Errorf("after AddDevice: online %v offline %v, want 0 and 1", on, off)
	}
	poll.Until(t, "the new device reconciled and its desired document published", 10*time.Second, func() bool {
		m := scrape(t, srv)
		return reconciles(m) >= 1 && value(m, "chorus_desired_published_total", "") >= 1
	})

	// The agent connects: online, and its skills report counts by state.
	received := value(scrape(t, srv), "chorus_mqtt_messages_received_total", "")
	c := announce(t, b, creds.Username, creds.Password, "kitchen", []map[string]any{
		{"id": "hello.test", "version": "1.0.0", "state": "loaded"},
		{"id": "broken.test", "version": "1.0.0", "state": "failed"},
		{"id": "odd.test", "version": "1.0.0", "state": "exploded"},
	})
	poll.Until(t, "the device online with its skills counted", 10*time.Second, func() bool {
		m := scrape(t, srv)
		return value(m, "chorus_devices", "online") == 1 && value(m, "chorus_devices", "offline") == 0 &&
			value(m, "chorus_skills", "loaded") == 1 && value(m, "chorus_skills", "failed") == 1 &&
			value(m, "chorus_skills", "other") == 1
	})
	// A new report: the counts follow it.
	report(t, c, "kitchen", []map[string]any{
		{"id": "hello.test", "version": "1.0.0", "state": "loaded"},
		{"id": "broken.test", "version": "1.0.0", "state": "loaded"},
	})
	poll.Until(t, "the skill counts to follow the new report", 10*time.Second, func() bool {
		m := scrape(t, srv)
		return value(m, "chorus_skills", "loaded") == 2 && value(m, "chorus_skills", "failed") == 0 &&
			value(m, "chorus_skills", "other") == 0
	})
	m = scrape(t, srv)
	if got := value(m, "chorus_mqtt_clients_connected", ""); got < 1 {
		t.Errorf("mqtt clients connected = %v, want ≥ 1", got)
	}
	if got := value(m, "chorus_mqtt_messages_received_total", ""); got < received+3 {
		t.Errorf("messages received = %v, want ≥ %v", got, received+3)
	}

	// A rollout to it: one rollout, one execution.
	if _, err := ctl.PublishSkill(ctx, "test", bytes.NewReader(skillArchive(t, "hello.test", "2.0.0"))); err != nil {
		t.Fatal(err)
	}
	_, err = ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("kitchen")}})
	if err != nil {
		t.Fatal(err)
	}
	m = scrape(t, srv)
	if got := total(m, "chorus_rollouts"); got != 1 {
		t.Errorf("rollouts = %v, want 1", got)
	}
	if got := total(m, "chorus_rollout_executions"); got != 1 {
		t.Errorf("executions = %v, want 1", got)
	}
}

// announce publishes what an agent publishes at connection: birth,
// availability and a skills report, all retained and with its session.
func announce(t *testing.T, b *broker.Broker, user, pass, dev string, skills []map[string]any) *brokertest.Client {
	t.Helper()
	c := brokertest.MustConnect(t, b.Addr(), user, pass, brokertest.ConnectOptions{ClientID: dev})
	birth, _ := json.Marshal(map[string]any{"session": 1, "agent_version": "test"})
	publishState(t, c, "chorus/v1/"+dev+"/birth", birth)
	publishState(t, c, "chorus/v1/"+dev+"/availability", []byte("online"))
	report(t, c, dev, skills)
	return c
}

func report(t *testing.T, c *brokertest.Client, dev string, skills []map[string]any) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"applied_version": 0, "skills": skills})
	publishState(t, c, "chorus/v1/"+dev+"/skills", payload)
}

func publishState(t *testing.T, c *brokertest.Client, topic string, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: payload,
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: "1"}}}})
	if err != nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
}

func TestMetricsOffWithoutGatherer(t *testing.T) {
	srv, _ := start(t)
	resp, _ := do(t, srv, call{method: "GET", path: "/metrics"}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics without Config.Metrics: %d, want 404", resp.StatusCode)
	}
}
