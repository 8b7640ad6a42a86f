//go:build !chorus_agent

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// The CLI's tests run `chorus fleet` against a real gateway in process
// (fleet/gatewayd: the broker, the controller over SQLite and the HTTP API),
// behind an apiFront that records each request. Only what a real server
// cannot be made to answer (a scripted rollout's progress, a table pinned
// to a fixed clock) uses the fixture server of fleet_fake_test.go.

// apiReq is one request the CLI made.
type apiReq struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   []byte
}

// line is "METHOD /path?query".
func (r apiReq) line() string {
	if r.Query == "" {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query
}

// apiFront records every request and hands it to next.
type apiFront struct {
	srv   *httptest.Server
	token string

	mu   sync.Mutex
	reqs []apiReq
}

func newFront(t *testing.T, token string, next http.Handler) *apiFront {
	t.Helper()
	f := &apiFront{token: token}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, apiReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: body})
		f.mu.Unlock()
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// env is the environment that points the CLI at the front.
func (f *apiFront) env() map[string]string {
	return map[string]string{"CHORUS_SERVER": f.srv.URL, "CHORUS_TOKEN": f.token}
}

func (f *apiFront) requests() []apiReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func (f *apiFront) lines() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.line())
	}
	return out
}

// testGateway is a real gateway in process.
type testGateway struct {
	m      *gatewayd.Main
	client *fleetclient.Client
	// rollout is the seeded rollout: hello.chorus on tag home.
	rollout int64
}

// startTestGateway runs a gateway on loopback with an empty fleet.
func startTestGateway(t *testing.T) *testGateway {
	t.Helper()
	m := gatewaydtest.Start(t, gatewayd.Config{ValidateSkill: validateSkill, Version: "test"})
	c, err := fleetclient.New(fleetclient.Config{BaseURL: m.Up().HTTPURL, Token: m.Token()})
	if err != nil {
		t.Fatal(err)
	}
	return &testGateway{m: m, client: c}
}

// startFleetGateway runs a gateway holding the CLI tests' fleet: kitchen
// (tag home; online, connectivity network and gui without internet) and
// hall (home, quiet; never connected); hello.chorus and weather.chorus from
// configs/skills; integration ha (speak); operator ops; and a rollout of
// hello.chorus on tag home.
func startFleetGateway(t *testing.T) *testGateway {
	t.Helper()
	g := startTestGateway(t)
	ctx := fleetCtx(t)
	kitchen := g.must1(t)(g.client.AddDevice(ctx, "kitchen", []string{"home"}))
	g.must1(t)(g.client.AddDevice(ctx, "hall", []string{"home", "quiet"}))
	for _, s := range []string{"hello.chorus", "weather.chorus"} {
		var buf bytes.Buffer
		if _, err := artifact.Pack("../../configs/skills/"+s, &buf); err != nil {
			t.Fatal(err)
		}
		if _, err := g.client.Publish(ctx, &buf); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.client.AddIntegration(ctx, "ha", []string{"speak"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.AddOperator(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	g.announce(t, kitchen.Credentials, `{"network":true,"internet":false,"gui":true}`)
	r, err := g.client.CreateRollout(ctx, api.RolloutRequest{SkillID: "hello.chorus", Version: "1.0.0",
		Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.TagTarget("home")}})
	if err != nil {
		t.Fatal(err)
	}
	g.rollout = r.ID
	// The engine starts it on kitchen, which is online; hall's waits.
	_, err = g.client.WaitRollout(ctx, r.ID, fleetclient.WaitOptions{Interval: 10 * time.Millisecond,
		Until: func(d api.RolloutDetail) bool {
			return d.Rollout.State == fleet.RolloutInProgress && d.Rollout.Counts.InProgress == 1
		}})
	if err != nil {
		t.Fatalf("the seeded rollout never started on kitchen: %v", err)
	}
	return g
}

func (g *testGateway) must1(t *testing.T) func(api.Enrolled, error) api.Enrolled {
	return func(e api.Enrolled, err error) api.Enrolled {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// announce connects as the device's agent and publishes, retained, what an
// agent does at start (birth, availability, connectivity), then waits for
// the controller to list it online with that connectivity. The connection
// stays up until the test ends: a device is online only while its agent's
// connection lives (presence, docs/topics.md).
func (g *testGateway) announce(t *testing.T, c configs.AgentCredentials, connectivity string) {
	t.Helper()
	cl := brokertest.MustConnect(t, g.m.Broker().Addr(), c.Username, c.Password, brokertest.ConnectOptions{ClientID: c.Device})
	t.Cleanup(func() { cl.Close() })
	ctx := fleetCtx(t)
	for _, m := range []struct{ level, payload string }{
		{"birth", `{"session":1,"agent_version":"0.1.0"}`}, {"availability", "online"}, {"connectivity", connectivity},
	} {
		_, err := cl.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + c.Device + "/" + m.level, QoS: 1, Retain: true,
			Payload: []byte(m.payload), Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: "1"}}}})
		if err != nil {
			t.Fatalf("publish %s: %v", m.level, err)
		}
	}
	var d api.Device
	var err error
	if werr := poll.Wait(ctx, c.Device+" online with its connectivity", 10*time.Second, func() bool {
		d, err = g.client.Device(ctx, c.Device)
		_, reported := d.ParseConnectivity()
		return err == nil && d.Online && reported
	}); werr != nil {
		t.Fatalf("%v: %+v (%v)", werr, d, err)
	}
}

// front is a recording front to the gateway's API, with its token.
func (g *testGateway) front(t *testing.T) *apiFront {
	t.Helper()
	u, err := url.Parse(g.m.Up().HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	return newFront(t, g.m.Token(), httputil.NewSingleHostReverseProxy(u))
}

// decodeOut decodes the CLI's JSON output into v.
func decodeOut(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}
