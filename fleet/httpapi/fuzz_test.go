package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// fuzzEndpoints are the API calls that decode a JSON body, picked by the
// fuzzer's first argument. pi-1 and pi-2 are enrolled and hello.test 1.0.0
// is published; device calls authenticate as pi-1.
var fuzzEndpoints = []struct {
	method, path string
	device       bool
}{
	{"POST", "/v1/devices", false},
	{"PUT", "/v1/devices/pi-1/tags", false},
	{"POST", "/v1/integrations", false},
	{"POST", "/v1/operators", false},
	{"PUT", "/v1/skills/hello.test/config", false},
	{"POST", "/v1/rollouts", false},
	{"POST", "/v1/rollouts/1/abort", false},
	{"PUT", "/v1/routes/pi-2", false},
	{"POST", "/v1/device/skills", true},
}

// fuzzFleet is a gateway's HTTP API over a real controller, broker and
// SQLite file, set up once per fuzzing process.
type fuzzFleet struct {
	srv    *httpapi.Server
	ctl    *controller.Controller
	pass   string // pi-1's secret
	client *http.Client
}

func startFuzzFleet(tb testing.TB) *fuzzFleet {
	tb.Helper()
	dir := tb.TempDir()
	b := brokertest.Start(tb, broker.Config{})
	db, err := sqlite.Open(filepath.Join(dir, "fleet.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: db, Broker: b, ArtifactDir: filepath.Join(dir, "artifacts"),
		ValidateSkill: validateSkill, Tick: time.Hour}) // no engine passes between a request and its check
	if err != nil {
		tb.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: ctl, Token: token, VerifyDevice: ctl.VerifyDevice})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Close(context.Background())
		ctl.Close()
		db.Close()
	})
	ctx := context.Background()
	if _, err := ctl.PublishSkill(ctx, "test", bytes.NewReader(skillArchive(tb, "hello.test", "1.0.0"))); err != nil {
		tb.Fatal(err)
	}
	f := &fuzzFleet{srv: srv, ctl: ctl, client: &http.Client{Timeout: 30 * time.Second}}
	for _, id := range []string{"pi-1", "pi-2"} {
		_, creds, err := ctl.AddDevice(ctx, "test", id, []string{"kitchen"})
		if err != nil {
			tb.Fatal(err)
		}
		if id == "pi-1" {
			f.pass = creds.Password
		}
	}
	return f
}

// snapshot is what a refused request must leave as it was.
type snapshot struct {
	Devices, Integrations, Operators, Rollouts, Routes int
	Tags                                               []string
	DesiredPi1, DesiredPi2                             int64
	NewestAudit                                        int64
}

func (f *fuzzFleet) snapshot(t *testing.T) snapshot {
	t.Helper()
	ctx := context.Background()
	var s snapshot
	ds, err1 := f.ctl.ListDevices(ctx, fleet.DeviceFilter{})
	is, err2 := f.ctl.ListIntegrations(ctx)
	os, err3 := f.ctl.ListOperators(ctx)
	rs, err4 := f.ctl.ListRollouts(ctx, fleet.RolloutFilter{})
	routes, err5 := f.ctl.ListRoutes(ctx)
	audit, err6 := f.ctl.ListAudit(ctx, fleet.AuditFilter{}, 100)
	d1, err7 := f.ctl.DesiredOf(ctx, "pi-1")
	d2, err8 := f.ctl.DesiredOf(ctx, "pi-2")
	pi1, err9 := f.ctl.GetDevice(ctx, "pi-1")
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9} {
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	s.Devices, s.Integrations, s.Operators, s.Rollouts, s.Routes = len(ds), len(is), len(os), len(rs), len(routes)
	s.Tags, s.DesiredPi1, s.DesiredPi2 = pi1.Tags, d1.Version, d2.Version
	for _, a := range audit {
		if a.Actor != fleet.ActorController { // the engine acts on its own time (a rollout it starts)
			s.NewestAudit = max(s.NewestAudit, a.ID)
		}
	}
	return s
}

func (f *fuzzFleet) call(t *testing.T, endpoint byte, body []byte) (*http.Response, []byte) {
	t.Helper()
	ep := fuzzEndpoints[int(endpoint)%len(fuzzEndpoints)]
	req, err := http.NewRequest(ep.method, f.srv.URL()+ep.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ep.device {
		req.SetBasicAuth("pi-1", f.pass)
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", ep.method, ep.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", ep.method, ep.path, err)
	}
	return resp, b
}

// FuzzRequestBody sends arbitrary bodies to every API call that decodes
// JSON, through the real handlers, controller and SQLite store. The
// promise (docs/security.md "Input limits"): no body makes the server fail
// (5xx) or panic; a refusal is a 4xx with a JSON error body that has a code
// and a message; a refused request changes nothing (registry counts, pi-1's
// tags, the desired documents and the audit log are as they were). The
// corpus is testdata/fuzz/FuzzRequestBody.
func FuzzRequestBody(f *testing.F) {
	fl := startFuzzFleet(f) // once per fuzzing process
	f.Fuzz(func(t *testing.T, endpoint byte, body []byte) {
		before := fl.snapshot(t)
		resp, b := fl.call(t, endpoint, body)
		ep := fuzzEndpoints[int(endpoint)%len(fuzzEndpoints)]
		switch {
		case resp.StatusCode >= 500:
			t.Fatalf("%s %s %q: %d %s", ep.method, ep.path, body, resp.StatusCode, b)
		case resp.StatusCode >= 400:
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s %q: %d with a body that is not a JSON error: %s", ep.method, ep.path, body, resp.StatusCode, b)
			}
			if after := fl.snapshot(t); !reflect.DeepEqual(after, before) {
				t.Fatalf("%s %s %q refused (%d %s) but changed the fleet:\n before %+v\n after  %+v",
					ep.method, ep.path, body, resp.StatusCode, b, before, after)
			}
		case resp.StatusCode != http.StatusNoContent && !json.Valid(b):
			t.Fatalf("%s %s %q: %d with invalid JSON: %s", ep.method, ep.path, body, resp.StatusCode, b)
		}
	})
}
