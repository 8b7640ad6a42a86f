//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/gateway/artifact"
)

func fleetCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// TestFleetRequests runs each command against a real gateway and checks
// the exact requests it made (method, path and query, body, bearer token)
// and what it printed. Commands that change what others read get a gateway
// of their own; the rest share one.
func TestFleetRequests(t *testing.T) {
	t.Parallel()
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"units": "metric"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := startFleetGateway(t)
	paused := func(t *testing.T, g *testGateway) {
		if _, err := g.client.PauseRollout(fleetCtx(t), g.rollout); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		args     []string
		own      bool                               // a gateway of its own: the command changes what others read
		setup    func(t *testing.T, g *testGateway) // on the own gateway, before the command
		want     []string                           // the requests, in order
		wantBody string                             // the last request's JSON body; "" for none
		wantOut  []string                           // in stdout
	}{
		{name: "device add", args: []string{"device", "add", "pi-1", "--tag", "kitchen", "--tag", "hall"},
			want: []string{"POST /v1/devices"}, wantBody: `{"id":"pi-1","tags":["kitchen","hall"]}`,
			wantOut: []string{`"device": "pi-1"`, `"username": "pi-1"`, `"password": "`, `"skill_key": "`}},
		{name: "device add untagged", args: []string{"device", "add", "pi-2"},
			want: []string{"POST /v1/devices"}, wantBody: `{"id":"pi-2","tags":[]}`, wantOut: []string{`"skill_key"`}},
		{name: "device list", args: []string{"device", "list", "--tag", "home"},
			want: []string{"GET /v1/devices?tag=home"}, wantOut: []string{"kitchen", "hall"}},
		{name: "device show", args: []string{"device", "show", "kitchen"},
			want: []string{"GET /v1/devices/kitchen"}, wantOut: []string{"network y, internet n, gui y"}},
		{name: "device tag set", args: []string{"device", "tag", "hall", "--set", "a,b"}, own: true,
			want: []string{"PUT /v1/devices/hall/tags"}, wantBody: `{"tags":["a","b"]}`, wantOut: []string{"device hall tags: a, b"}},
		{name: "device tag clear", args: []string{"device", "tag", "hall", "--set", ""}, own: true,
			want: []string{"PUT /v1/devices/hall/tags"}, wantBody: `{"tags":[]}`, wantOut: []string{"device hall tags: -"}},
		{name: "device tag add rm", args: []string{"device", "tag", "hall", "--add", "x", "--rm", "quiet", "--add", "home"}, own: true,
			want: []string{"GET /v1/devices/hall", "PUT /v1/devices/hall/tags"}, wantBody: `{"tags":["home","x"]}`, wantOut: []string{"home, x"}},
		{name: "device rm", args: []string{"device", "rm", "hall"}, own: true,
			want: []string{"DELETE /v1/devices/hall"}, wantOut: []string{"device hall removed"}},
		{name: "device rotate", args: []string{"device", "rotate", "kitchen"}, own: true,
			want: []string{"POST /v1/devices/kitchen/rotate"}, wantOut: []string{`"username": "kitchen"`, `"key_version": 2`}},
		{name: "integration add", args: []string{"integration", "add", "ha2", "--allow", "speak", "--allow", "recognizer_loop:utterance"},
			want: []string{"POST /v1/integrations"}, wantBody: `{"name":"ha2","allow":["speak","recognizer_loop:utterance"]}`,
			wantOut: []string{"username: integration:ha2", "password: "}},
		{name: "integration list", args: []string{"integration", "list"}, want: []string{"GET /v1/integrations"}, wantOut: []string{"ha", "speak"}},
		{name: "integration rm", args: []string{"integration", "rm", "ha"}, own: true,
			want: []string{"DELETE /v1/integrations/ha"}, wantOut: []string{"integration ha removed"}},
		{name: "operator add", args: []string{"operator", "add", "alice"},
			want: []string{"POST /v1/operators"}, wantBody: `{"name":"alice"}`, wantOut: []string{"username: operator:alice"}},
		{name: "operator list", args: []string{"operator", "list"}, want: []string{"GET /v1/operators"}, wantOut: []string{"ops"}},
		{name: "operator rm", args: []string{"operator", "rm", "ops"}, own: true,
			want: []string{"DELETE /v1/operators/ops"}, wantOut: []string{"operator ops removed"}},
		{name: "skill list", args: []string{"skill", "list"}, want: []string{"GET /v1/skills"},
			wantOut: []string{"hello.chorus", "weather.chorus", "fixed example forecast"}},
		{name: "skill show", args: []string{"skill", "show", "weather.chorus"}, want: []string{"GET /v1/skills/weather.chorus"},
			wantOut: []string{"internet"}},
		{name: "skill search", args: []string{"skill", "search", "what", "weather", "--limit", "3"},
			want: []string{"GET /v1/skills/search?limit=3&q=what+weather"}, wantOut: []string{"weather.chorus"}},
		{name: "skill config", args: []string{"skill", "config", "weather.chorus", "--tag", "home", settings},
			want:     []string{"PUT /v1/skills/weather.chorus/config"},
			wantBody: `{"target":{"kind":"tag","value":"home"},"settings":{"units":"metric"}}`, wantOut: []string{"settings of weather.chorus for tag home set"}},
		{name: "install", args: []string{"install", "weather", "--tag", "home", "--device", "kitchen", "--canary", "1", "--max-in-flight", "2",
			"--failure-threshold", "20%", "--min-finished", "3", "--timeout", "90s", "--deadline", "2h", "--rate", "20/min", "--ramp", "5/min",
			"--ramp-every", "30s"}, own: true,
			want: []string{"GET /v1/skills/resolve?q=weather", "POST /v1/rollouts"},
			wantBody: `{"skill_id":"weather.chorus","version":"1.0.0","action":"install",
				"targets":[{"kind":"device","value":"kitchen"},{"kind":"tag","value":"home"}],
				"strategy":{"canary":1,"max_in_flight":2,"failure_threshold_pct":20,"min_executed":3,"timeout":"1m30s",
				"deadline":"2h0m0s","rate_per_min":20,"ramp_base_per_min":5,"ramp_every":"30s"}}`,
			wantOut: []string{"rollout 2 created: install weather.chorus@1.0.0 on device kitchen, tag home (queued)"}},
		{name: "install, old min-executed", args: []string{"install", "hello.chorus@1.0.0", "--all", "--min-executed", "2"}, own: true,
			want:     []string{"GET /v1/skills/resolve?q=hello.chorus", "POST /v1/rollouts"},
			wantBody: `{"skill_id":"hello.chorus","version":"1.0.0","action":"install","targets":[{"kind":"all"}],"strategy":{"min_executed":2}}`,
			wantOut:  []string{"install hello.chorus@1.0.0 on all devices"}},
		{name: "install version", args: []string{"install", "hello.chorus@1.0.0", "--all", "--failure-threshold", "15"}, own: true,
			want:     []string{"GET /v1/skills/resolve?q=hello.chorus", "POST /v1/rollouts"},
			wantBody: `{"skill_id":"hello.chorus","version":"1.0.0","action":"install","targets":[{"kind":"all"}],"strategy":{"failure_threshold_pct":15}}`,
			wantOut:  []string{"install hello.chorus@1.0.0 on all devices"}},
		{name: "uninstall", args: []string{"uninstall", "hello.chorus", "--device", "kitchen"}, own: true,
			want:     []string{"GET /v1/skills/resolve?q=hello.chorus", "POST /v1/rollouts"},
			wantBody: `{"skill_id":"hello.chorus","action":"uninstall","targets":[{"kind":"device","value":"kitchen"}],"strategy":{}}`,
			wantOut:  []string{"uninstall hello.chorus from device kitchen"}},
		{name: "rollout list", args: []string{"rollout", "list", "--state", "in_progress"},
			want: []string{"GET /v1/rollouts?state=in_progress"}, wantOut: []string{"hello.chorus", "tag home", "0/2"}},
		{name: "rollout show", args: []string{"rollout", "show", "1"}, want: []string{"GET /v1/rollouts/1"},
			wantOut: []string{"rollout 1 in_progress: 0/2 succeeded, 0 failed, 1 in progress, 1 queued", "kitchen", "hall"}},
		{name: "rollout pause", args: []string{"rollout", "pause", "1"}, own: true, want: []string{"POST /v1/rollouts/1/pause"},
			wantOut: []string{"rollout 1 paused"}},
		{name: "rollout resume", args: []string{"rollout", "resume", "1"}, own: true, setup: paused,
			want: []string{"POST /v1/rollouts/1/resume"}, wantOut: []string{"rollout 1 in_progress"}},
		{name: "rollout abort rollback", args: []string{"rollout", "abort", "1", "--rollback"}, own: true,
			want: []string{"POST /v1/rollouts/1/abort"}, wantBody: `{"rollback":true}`, wantOut: []string{"rollout 1 aborted"}},
		{name: "rollout abort", args: []string{"rollout", "abort", "1"}, own: true,
			want: []string{"POST /v1/rollouts/1/abort"}, wantBody: `{"rollback":false}`, wantOut: []string{"rollout 1 aborted"}},
		{name: "audit", args: []string{"audit", "--limit", "5", "--subject", "device/kitchen"},
			want: []string{"GET /v1/audit?limit=5&subject=device%2Fkitchen"}, wantOut: []string{"device.add", `{"tags":["home"]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := shared
			if tt.own {
				g = startFleetGateway(t)
			}
			if tt.setup != nil {
				tt.setup(t, g)
			}
			f := g.front(t)
			r := chorus(fleetCtx(t), f.env(), append([]string{"fleet"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit code = %d, stderr %s", r.code, r.stderr)
			}
			if got := f.lines(); !slices.Equal(got, tt.want) {
				t.Errorf("requests = %q, want %q", got, tt.want)
			}
			reqs := f.requests()
			for _, req := range reqs {
				if req.Auth != "Bearer "+f.token {
					t.Errorf("%s: Authorization = %q, want the bearer token", req.line(), req.Auth)
				}
			}
			last := reqs[len(reqs)-1]
			switch {
			case tt.wantBody == "" && len(last.Body) > 0:
				t.Errorf("body = %s, want none", last.Body)
			case tt.wantBody != "" && !sameJSON(t, last.Body, tt.wantBody):
				t.Errorf("body = %s, want %s", last.Body, tt.wantBody)
			case tt.wantBody != "" && last.ContentType != "application/json":
				t.Errorf("Content-Type = %q, want application/json", last.ContentType)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout = %q, want it to contain %q", r.stdout, w)
				}
			}
		})
	}
}

// TestFleetErrors checks the wording and exit code of each kind of failure:
// the gateway's message with 1, usage errors with 2 before any request.
func TestFleetErrors(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	notJSON := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(notJSON, []byte(`["a"]`), 0o644)

	tests := []struct {
		name     string
		args     []string
		env      map[string]string // replaces the gateway's CHORUS_SERVER/CHORUS_TOKEN when set
		wantCode int
		wantErr  string // in stderr
		noCalls  bool   // no request reached the gateway
	}{
		{name: "not found", args: []string{"device", "show", "nope"}, wantCode: 1, wantErr: "chorus: device \"nope\" not found\n"},
		{name: "conflict", args: []string{"device", "add", "kitchen"}, wantCode: 1, wantErr: "chorus: device \"kitchen\" already exists\n"},
		{name: "invalid", args: []string{"device", "add", "bad id"}, wantCode: 1, wantErr: `"bad id"`},
		{name: "wrong token", args: []string{"device", "list"}, env: map[string]string{"CHORUS_TOKEN": "nope"},
			wantCode: 1, wantErr: "missing or wrong operator token (check --token, CHORUS_TOKEN or <data-dir>/operator-token)"},
		{name: "unreachable", args: []string{"device", "list"}, env: map[string]string{"CHORUS_SERVER": closed.URL, "CHORUS_TOKEN": "t"},
			wantCode: 1, wantErr: "cannot reach the gateway at " + closed.URL + ": "},
		{name: "unreachable hint", args: []string{"skill", "list", "--server", closed.URL, "--token", "t"}, env: map[string]string{},
			wantCode: 1, wantErr: "; is `chorus gateway` or `chorus up` running?\n"},
		{name: "not the API", args: []string{"device", "list"}, env: map[string]string{"CHORUS_SERVER": proxy.URL, "CHORUS_TOKEN": "t"},
			wantCode: 1, wantErr: "chorus: HTTP 502 Bad Gateway: upstream down\n"},
		{name: "settings not an object", args: []string{"skill", "config", "weather.chorus", "--all", notJSON},
			wantCode: 1, wantErr: "not a JSON object", noCalls: true},
		{name: "bad output", args: []string{"device", "list", "-o", "yaml"}, wantCode: 2, wantErr: `--output "yaml": want text or json`, noCalls: true},
		{name: "unknown flag", args: []string{"device", "list", "--frob"}, wantCode: 2, wantErr: "unknown flag: --frob", noCalls: true},
		{name: "missing arg", args: []string{"device", "show"}, wantCode: 2, wantErr: "accepts 1 arg(s), received 0", noCalls: true},
		{name: "no target", args: []string{"install", "weather.chorus"}, wantCode: 2, wantErr: "no target: pass --device ID, --tag T or --all", noCalls: true},
		{name: "all and tag", args: []string{"install", "weather.chorus", "--all", "--tag", "x"}, wantCode: 2, wantErr: "--all names every device", noCalls: true},
		{name: "uninstall version", args: []string{"uninstall", "weather.chorus@1", "--all"}, wantCode: 2, wantErr: "uninstall takes no version", noCalls: true},
		{name: "empty version", args: []string{"install", "weather.chorus@", "--all"}, wantCode: 2, wantErr: "empty version", noCalls: true},
		{name: "bad threshold", args: []string{"install", "weather.chorus", "--all", "--failure-threshold", "120%"},
			wantCode: 2, wantErr: "want a percentage from 0 to 100", noCalls: true},
		{name: "negative canary", args: []string{"install", "weather.chorus", "--all", "--canary", "-1"}, wantCode: 2, wantErr: "--canary -1", noCalls: true},
		{name: "negative rate", args: []string{"install", "weather.chorus", "--all", "--rate", "-3/min"},
			wantCode: 2, wantErr: `--rate "-3/min": want a whole number of starts per minute, e.g. 10/min (0: no cap)`, noCalls: true},
		{name: "bad rate", args: []string{"install", "weather.chorus", "--all", "--rate", "fast"}, wantCode: 2, wantErr: "e.g. 10/min", noCalls: true},
		{name: "ramp without rate", args: []string{"install", "weather.chorus", "--all", "--ramp", "2/min"},
			wantCode: 2, wantErr: "--ramp 2/min needs --rate, the rate it climbs to (e.g. --rate 8/min)", noCalls: true},
		{name: "ramp above rate", args: []string{"install", "weather.chorus", "--all", "--rate", "2/min", "--ramp", "5/min"},
			wantCode: 2, wantErr: "--ramp 5/min is above --rate 2/min", noCalls: true},
		{name: "negative deadline", args: []string{"install", "weather.chorus", "--all", "--deadline", "-5m"},
			wantCode: 2, wantErr: "--deadline -5m0s: must not be negative (0: none)", noCalls: true},
		{name: "bad deadline", args: []string{"install", "weather.chorus", "--all", "--deadline", "soon"},
			wantCode: 2, wantErr: `invalid argument "soon" for "--deadline"`, noCalls: true},
		{name: "bad rollout id", args: []string{"rollout", "show", "x"}, wantCode: 2, wantErr: `rollout ID "x": want a positive number`, noCalls: true},
		{name: "from without dir", args: []string{"device", "add", "--from", "f.csv"}, wantCode: 2, wantErr: "--from needs --credentials-dir", noCalls: true},
		{name: "id and from", args: []string{"device", "add", "x", "--from", "f.csv", "--credentials-dir", "d"}, wantCode: 2, wantErr: "not both", noCalls: true},
		{name: "tag without change", args: []string{"device", "tag", "hall"}, wantCode: 2, wantErr: "pass --set a,b, --add T or --rm T", noCalls: true},
		{name: "tag set and add", args: []string{"device", "tag", "hall", "--set", "a", "--add", "b"}, wantCode: 2, wantErr: "--set replaces all tags", noCalls: true},
		{name: "config two targets", args: []string{"skill", "config", "weather.chorus", "--tag", "a", "--device", "b", notJSON},
			wantCode: 2, wantErr: "exactly one of", noCalls: true},
		{name: "no gateway", args: []string{"device", "list", "--data-dir", t.TempDir()}, env: map[string]string{},
			wantCode: 2, wantErr: "no gateway: pass --server URL or set CHORUS_SERVER, or run next to `chorus up`", noCalls: true},
		{name: "no token", args: []string{"device", "list", "--data-dir", t.TempDir()}, env: map[string]string{"CHORUS_SERVER": "http://127.0.0.1:1"},
			wantCode: 2, wantErr: "no operator token: pass --token or set CHORUS_TOKEN", noCalls: true},
		{name: "bad server", args: []string{"device", "list", "--server", "127.0.0.1:8080", "--token", "t"}, env: map[string]string{},
			wantCode: 2, wantErr: "want http://host:port", noCalls: true},
	}
	g := startFleetGateway(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := g.front(t)
			env := f.env()
			if tt.env != nil {
				env = tt.env
				if _, ok := env["CHORUS_SERVER"]; !ok && len(env) > 0 {
					env["CHORUS_SERVER"] = f.srv.URL
				}
			}
			r := chorus(fleetCtx(t), env, append([]string{"fleet"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr %s", r.code, tt.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.wantErr)
			}
			if got := f.lines(); tt.noCalls && len(got) > 0 {
				t.Errorf("requests = %q, want none", got)
			}
		})
	}
}

// TestFleetFindsGateway finds the server and token next to `chorus up`
// and lets flags and the environment override them.
func TestFleetFindsGateway(t *testing.T) {
	t.Parallel()
	g := startFleetGateway(t).front(t)
	dataDir := func(url, token string) string {
		dir := t.TempDir()
		if err := configs.WriteUp(configs.UpPath(dir), configs.Up{HTTPURL: url, MQTTURL: "mqtt://127.0.0.1:1883"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "operator-token"), []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good := dataDir(g.srv.URL, g.token)
	stale := dataDir("http://127.0.0.1:1", "stale-token")
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{name: "--data-dir", args: []string{"--data-dir", good}},
		{name: "CHORUS_DATA_DIR", env: map[string]string{"CHORUS_DATA_DIR": good}},
		{name: "flags over up.json", args: []string{"--data-dir", stale, "--server", g.srv.URL, "--token", g.token}},
		{name: "environment over up.json", env: map[string]string{"CHORUS_SERVER": g.srv.URL, "CHORUS_TOKEN": g.token, "CHORUS_DATA_DIR": stale}},
		{name: "server flag, token from data dir", args: []string{"--data-dir", good, "--server", g.srv.URL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"fleet", "device", "list"}, tt.args...)
			r := chorus(fleetCtx(t), tt.env, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "kitchen") {
				t.Errorf("exit code %d, stdout %q, stderr %q; want the device list", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestFleetDeviceListText pins the table: columns of the issue, aligned.
func TestFleetDeviceListText(t *testing.T) {
	t.Parallel()
	g := newFakeGateway(t)
	r := chorus(fleetCtx(t), g.env(), "fleet", "device", "list")
	want := "" +
		"ID       ONLINE  LAST SEEN             AGENT  NET/INET/GUI  LOADED/DESIRED  DRIFT  TAGS\n" +
		"kitchen  yes     2026-11-29T19:00:00Z  0.1.0  y/n/y         2/3             yes    home\n" +
		"hall     no      -                     -      -             0/0             no     home,quiet\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit code %d, stdout:\n%s\nwant:\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
}

// TestFleetOutputJSON checks --output json gives the API's envelopes,
// with [] rather than null for an empty list.
func TestFleetOutputJSON(t *testing.T) {
	t.Parallel()
	shared := startFleetGateway(t)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out []byte)
	}{
		{name: "device list", args: []string{"device", "list", "--tag", "home", "--output", "json"}, check: func(t *testing.T, out []byte) {
			var v api.DevicesResponse
			decodeOut(t, string(out), &v)
			i := slices.IndexFunc(v.Devices, func(d api.Device) bool { return d.ID == "kitchen" })
			if len(v.Devices) != 2 || i < 0 || !v.Devices[i].Drift || !v.Devices[i].Online {
				t.Fatalf("devices = %+v", v.Devices)
			}
			if !sameJSON(t, v.Devices[i].Connectivity, `{"network":true,"internet":false,"gui":true}`) {
				t.Errorf("connectivity = %s, want it verbatim", v.Devices[i].Connectivity)
			}
		}},
		{name: "empty list", args: []string{"device", "list", "--tag", "none", "-o", "json"}, check: func(t *testing.T, out []byte) {
			if !sameJSON(t, out, `{"devices": []}`) {
				t.Errorf("stdout = %s, want {\"devices\": []}", out)
			}
		}},
		{name: "rollout show", args: []string{"rollout", "show", "1", "-o", "json"}, check: func(t *testing.T, out []byte) {
			var d api.RolloutDetail
			decodeOut(t, string(out), &d)
			hall := slices.IndexFunc(d.Executions, func(e api.Execution) bool { return e.DeviceID == "hall" })
			if d.Rollout.ID != 1 || d.Rollout.CreatedBy != "operator" || len(d.Executions) != 2 || hall < 0 || d.Executions[hall].State != fleet.ExecQueued {
				t.Errorf("detail = %+v", d)
			}
		}},
		{name: "skill search", args: []string{"skill", "search", "weather", "-o", "json"}, check: func(t *testing.T, out []byte) {
			var v api.SearchResponse
			decodeOut(t, string(out), &v)
			if len(v.Results) == 0 || v.Results[0].Skill.SkillID != "weather.chorus" || v.Results[0].Score <= 0 {
				t.Errorf("results = %+v", v.Results)
			}
		}},
		{name: "audit", args: []string{"audit", "--subject", "device/hall", "-o", "json"}, check: func(t *testing.T, out []byte) {
			var v api.AuditResponse
			decodeOut(t, string(out), &v)
			if len(v.Entries) != 1 || v.Entries[0].Action != "device.add" || !sameJSON(t, v.Entries[0].Detail, `{"tags":["home","quiet"]}`) {
				t.Errorf("entries = %+v", v.Entries)
			}
		}},
		{name: "device add", args: []string{"device", "add", "pi-1", "-o", "json"}, check: func(t *testing.T, out []byte) {
			var v api.Enrolled
			decodeOut(t, string(out), &v)
			if v.Device.ID != "pi-1" || v.Credentials.Device != "pi-1" || !shared.m.Fleet().VerifyDevice("pi-1", v.Credentials.Password) {
				t.Errorf("enrolled = %+v; want pi-1 with credentials the gateway accepts", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := chorus(fleetCtx(t), shared.front(t).env(), append([]string{"fleet"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit code = %d, stderr %s", r.code, r.stderr)
			}
			tt.check(t, []byte(r.stdout))
		})
	}
}

// TestFleetCredentialsOut writes credentials with mode 0600, replacing a
// file with a wider mode, in the form `chorus agent --credentials` reads.
func TestFleetCredentialsOut(t *testing.T) {
	t.Parallel()
	g := startTestGateway(t)
	dir := t.TempDir()
	tests := []struct {
		name, file string
		args       []string
	}{
		{name: "add", file: "pi-7.json", args: []string{"device", "add", "pi-7"}},
		{name: "rotate over a file", file: "pi-7.json", args: []string{"device", "rotate", "pi-7"}},
	}
	os.WriteFile(filepath.Join(dir, "pi-7.json"), []byte("old"), 0o644)
	var previous string        // the password the last step wrote
	for _, tt := range tests { // in order: rotate needs the device
		path := filepath.Join(dir, tt.file)
		args := append(append([]string{"fleet"}, tt.args...), "--credentials-out", path)
		r := chorus(fleetCtx(t), g.front(t).env(), args...)
		if r.code != 0 || !strings.Contains(r.stdout, "credentials written to "+path) {
			t.Fatalf("%s: exit code %d, stdout %q, stderr %q", tt.name, r.code, r.stdout, r.stderr)
		}
		// The test gateway listens on loopback: the credentials say so (issue 16, point 1).
		if !strings.Contains(r.stderr, "these credentials work on this machine only") || !strings.Contains(r.stderr, "--advertise-mqtt") {
			t.Errorf("%s: no warning about loopback addresses in credentials; stderr %q", tt.name, r.stderr)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %s mode = %v (%v), want 0600", tt.name, path, fi.Mode().Perm(), err)
		}
		c, err := configs.ReadAgentCredentials(path)
		if err != nil || c.Device != "pi-7" || !g.m.Fleet().VerifyDevice("pi-7", c.Password) {
			t.Errorf("%s: credentials = %+v (%v), want pi-7's, which the gateway accepts", tt.name, c, err)
		}
		if previous != "" && g.m.Fleet().VerifyDevice("pi-7", previous) {
			t.Errorf("%s: the password before it still works", tt.name)
		}
		previous = c.Password
	}
}

// TestFleetBulkAdd enrols from a mixed CSV and JSON-lines file: bad lines
// and refused devices are reported, the rest are enrolled, exit code 1.
func TestFleetBulkAdd(t *testing.T) {
	t.Parallel()
	g := startFleetGateway(t).front(t)
	dir := t.TempDir()
	from := filepath.Join(dir, "devices.csv")
	credDir := filepath.Join(dir, "creds")
	file := "" +
		"id,tags\n" + // 1: header
		"pi-1, kitchen; hall\n" + // 2
		`{"id": "pi-2", "tags": ["porch"]}` + "\n" + // 3
		"pi-3,a,b\n" + // 4: three fields
		"kitchen,home\n" + // 5: exists on the gateway
		"# a comment\n" + // 6
		`{"id": "pi-4", "tag": ["x"]}` + "\n" + // 7: misspelt field
		"pi-1\n" + // 8: repeated
		"\n" + // 9
		"pi-5\n" // 10
	if err := os.WriteFile(from, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	r := chorus(fleetCtx(t), g.env(), "fleet", "device", "add", "--from", from, "--credentials-dir", credDir, "--tag", "fleet", "-o", "json")
	if r.code != 1 || !strings.Contains(r.stderr, "4 of 7 devices not enrolled") {
		t.Errorf("exit code %d, stderr %q; want 1 and 4 of 7 not enrolled", r.code, r.stderr)
	}
	var got struct{ Results []bulkResult }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	cred := func(id string) string { return filepath.Join(credDir, id+".json") }
	want := []bulkResult{
		{Line: 2, ID: "pi-1", Status: "added", CredentialsFile: cred("pi-1")},
		{Line: 3, ID: "pi-2", Status: "added", CredentialsFile: cred("pi-2")},
		{Line: 4, Status: "failed", Error: "3 fields, want id,tag1;tag2"},
		{Line: 5, ID: "kitchen", Status: "failed", Error: `device "kitchen" already exists`},
		{Line: 7, Status: "failed", Error: `not a JSON object of id and tags: json: unknown field "tag"`},
		{Line: 8, ID: "pi-1", Status: "failed", Error: "device pi-1 is already on line 2"},
		{Line: 10, ID: "pi-5", Status: "added", CredentialsFile: cred("pi-5")},
	}
	if !reflect.DeepEqual(got.Results, want) {
		t.Errorf("results:\n got %+v\nwant %+v", got.Results, want)
	}
	var bodies []string
	for _, req := range g.requests() {
		bodies = append(bodies, req.line()+" "+string(bytes.TrimSpace(req.Body)))
	}
	wantBodies := []string{
		`POST /v1/devices {"id":"pi-1","tags":["kitchen","hall","fleet"]}`,
		`POST /v1/devices {"id":"pi-2","tags":["porch","fleet"]}`,
		`POST /v1/devices {"id":"kitchen","tags":["home","fleet"]}`,
		`POST /v1/devices {"id":"pi-5","tags":["fleet"]}`,
	}
	if !slices.Equal(bodies, wantBodies) {
		t.Errorf("requests:\n got %q\nwant %q", bodies, wantBodies)
	}
	for _, id := range []string{"pi-1", "pi-2", "pi-5"} {
		fi, err := os.Stat(cred(id))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v (%v), want mode 0600", cred(id), fi, err)
		}
		if c, err := configs.ReadAgentCredentials(cred(id)); err != nil || c.Device != id {
			t.Errorf("%s: %+v (%v)", cred(id), c, err)
		}
	}
	if _, err := os.Stat(cred("kitchen")); err == nil {
		t.Error("credentials written for a device the gateway refused")
	}
}

// TestFleetBulkAddText checks the per-line report of text output.
func TestFleetBulkAddText(t *testing.T) {
	t.Parallel()
	g := startTestGateway(t).front(t)
	dir := t.TempDir()
	from := filepath.Join(dir, "devices.jsonl")
	os.WriteFile(from, []byte(`{"id":"pi-1"}`+"\n"+`{"id":"bad id"}`+"\n"), 0o644)
	r := chorus(fleetCtx(t), g.env(), "fleet", "device", "add", "--from", from, "--credentials-dir", dir)
	want := "" +
		"LINE  ID      RESULT  DETAIL\n" +
		"1     pi-1    added   " + filepath.Join(dir, "pi-1.json") + "\n" +
		`2     bad id  failed  device id "bad id": only letters, digits, '.', '_' and '-' are allowed` + "\n"
	if r.code != 1 || r.stdout != want {
		t.Errorf("exit code %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
}

// TestFleetInstallUnresolved: a name the catalog does not resolve to one
// skill gets the gateway's answer, exit 1, and no rollout.
func TestFleetInstallUnresolved(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, skill, want string }{
		{name: "typo", skill: "wether", want: `no skill named "wether"; did you mean "weather.chorus"?`},
		{name: "ambiguous", skill: "chorus", want: `skill name "chorus" is ambiguous: it could be "hello.chorus" or "weather.chorus"`},
	}
	shared := startFleetGateway(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := shared.front(t)
			r := chorus(fleetCtx(t), g.env(), "fleet", "install", tt.skill, "--all", "--wait")
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit code %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if got, want := g.lines(), []string{"GET /v1/skills/resolve?q=" + tt.skill}; !slices.Equal(got, want) {
				t.Errorf("requests = %q, want only %q", got, want)
			}
		})
	}
}

// TestFleetWait follows a rollout to its end: exit 0 only when it
// succeeded, with the progress on stderr.
func TestFleetWait(t *testing.T) {
	t.Parallel()
	step := func(state fleet.RolloutState, n api.Counts, execs ...api.Execution) api.RolloutDetail {
		return api.RolloutDetail{Rollout: api.Rollout{ID: 2, SkillID: "weather.chorus", Action: "install", State: state, Counts: n}, Executions: execs}
	}
	succeeded := []api.RolloutDetail{
		step("queued", api.Counts{Queued: 3}),
		step("in_progress", api.Counts{Succeeded: 1, InProgress: 1, Queued: 1}),
		step("in_progress", api.Counts{Succeeded: 2, InProgress: 1}),
		step("succeeded", api.Counts{Succeeded: 3}),
	}
	failedEnd := step("failed", api.Counts{Succeeded: 1, Failed: 1, TimedOut: 1},
		api.Execution{DeviceID: "kitchen", State: "succeeded"},
		api.Execution{DeviceID: "hall", State: "failed", Reason: "sha256 mismatch"},
		api.Execution{DeviceID: "porch", State: "timed_out"})
	failedEnd.Rollout.Reason = "failure threshold 20% reached"
	failed := []api.RolloutDetail{step("in_progress", api.Counts{InProgress: 3}), failedEnd}
	notDone := []api.RolloutDetail{
		step("in_progress", api.Counts{Succeeded: 1, InProgress: 1, Queued: 1},
			api.Execution{DeviceID: "kitchen", State: "succeeded"},
			api.Execution{DeviceID: "hall", State: "in_progress"},
			api.Execution{DeviceID: "porch", State: "queued", Reason: "offline since 2026-11-29T19:00:00Z", Blocked: true}),
		step("in_progress", api.Counts{Succeeded: 2, Queued: 1},
			api.Execution{DeviceID: "kitchen", State: "succeeded"},
			api.Execution{DeviceID: "hall", State: "succeeded", Reason: "installed, waiting for internet"},
			api.Execution{DeviceID: "porch", State: "queued", Reason: "offline since 2026-11-29T19:00:00Z", Blocked: true}),
	}
	// follow is what following the rollout requests: n reads of the counts
	// (the moving ones, and a repeat when the rollout stands still), then
	// one full read for the executions of the terminal or settled answer.
	follow := func(n int) []string {
		return append(slices.Repeat([]string{"GET /v1/rollouts/2?executions=false"}, n), "GET /v1/rollouts/2")
	}
	tests := []struct {
		name       string
		args       []string
		script     []api.RolloutDetail
		wantCode   int
		wantStderr []string
		wantStdout string
		wantCalls  []string
	}{
		{name: "install succeeded", args: []string{"install", "weather", "--tag", "home", "--canary", "1", "--wait"}, script: succeeded,
			wantStderr: []string{
				"rollout 2 created: install weather.chorus@2.1.0 on tag home\n",
				"rollout 2 queued: 0/3 succeeded, 0 failed, 0 in progress, 3 queued\n",
				"rollout 2 in_progress: 2/3 succeeded, 0 failed, 1 in progress\n",
				"rollout 2 succeeded: 3/3 succeeded, 0 failed, 0 in progress\n"},
			wantStdout: "rollout 2 succeeded: install on 3 devices\n",
			wantCalls:  append([]string{"GET /v1/skills/resolve?q=weather", "POST /v1/rollouts"}, follow(4)...)},
		{name: "install failed", args: []string{"install", "weather", "--all", "--wait"}, script: failed, wantCode: 1,
			wantStderr: []string{
				"rollout 2 failed: 1/3 succeeded, 1 failed, 0 in progress, 1 timed out\n",
				"  hall: failed: sha256 mismatch\n", "  porch: timed_out\n",
				"chorus: rollout 2 failed: failure threshold 20% reached\n"},
			wantCalls: append([]string{"GET /v1/skills/resolve?q=weather", "POST /v1/rollouts"}, follow(2)...)},
		{name: "install not done", args: []string{"install", "weather", "--all", "--wait"}, script: notDone, wantCode: 3,
			wantStderr: []string{
				"rollout 2 in_progress: 2/3 succeeded, 0 failed, 0 in progress, 1 queued\n",
				"  porch: queued: offline since 2026-11-29T19:00:00Z\n",
				"chorus: rollout 2 not done: every online device finished; 1 left waiting for offline devices (listed above); " +
					"it goes on: `chorus fleet rollout watch 2`\n"},
			wantCalls: append([]string{"GET /v1/skills/resolve?q=weather", "POST /v1/rollouts"}, follow(3)...)},
		{name: "watch not done", args: []string{"rollout", "watch", "2"}, script: notDone, wantCode: 3,
			wantStderr: []string{"  porch: queued: offline since"}, wantCalls: follow(3)},
		{name: "watch succeeded", args: []string{"rollout", "watch", "2"}, script: succeeded,
			wantStderr: []string{"rollout 2 in_progress: 1/3 succeeded, 0 failed, 1 in progress, 1 queued\n"},
			wantStdout: "rollout 2 succeeded", wantCalls: follow(4)},
		{name: "watch failed", args: []string{"rollout", "watch", "2"}, script: failed, wantCode: 1,
			wantStderr: []string{"chorus: rollout 2 failed: failure threshold 20% reached\n"},
			wantCalls:  follow(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newFakeGateway(t)
			g.script = tt.script
			args := append(append([]string{"fleet"}, tt.args...), "--poll-interval", "1ms")
			r := chorus(fleetCtx(t), g.env(), args...)
			if r.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr %s", r.code, tt.wantCode, r.stderr)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr = %q, want it to contain %q", r.stderr, w)
				}
			}
			if !strings.Contains(r.stdout, tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", r.stdout, tt.wantStdout)
			}
			if got := g.lines(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("requests = %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

// TestFleetSkillPublish sends a directory packed as `chorus skill pack`
// packs it, or an archive as it is, as application/gzip.
func TestFleetSkillPublish(t *testing.T) {
	t.Parallel()
	const skillDir = "../../configs/skills/hello.chorus"
	var packed bytes.Buffer
	info, err := artifact.Pack(skillDir, &packed)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "hello.tar.gz")
	os.WriteFile(archive, packed.Bytes(), 0o644)
	for _, arg := range []string{skillDir, archive} {
		t.Run(filepath.Base(arg), func(t *testing.T) {
			t.Parallel()
			g := startTestGateway(t).front(t)
			r := chorus(fleetCtx(t), g.env(), "fleet", "skill", "publish", arg)
			if want := "published hello.chorus 1.0.0 (sha256 " + info.SHA256; r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Fatalf("exit code %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
			}
			reqs := g.requests()
			if len(reqs) != 1 || reqs[0].line() != "POST /v1/skills" || reqs[0].ContentType != "application/gzip" ||
				!bytes.Equal(reqs[0].Body, packed.Bytes()) {
				t.Errorf("request = %+v, want POST /v1/skills with the packed archive as application/gzip", reqs)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		g := newFront(t, "t", http.NotFoundHandler())
		r := chorus(fleetCtx(t), g.env(), "fleet", "skill", "publish", filepath.Join(t.TempDir(), "nope"))
		if r.code != 1 || !strings.Contains(r.stderr, "no such file") || len(g.lines()) > 0 {
			t.Errorf("exit code %d, stderr %q, requests %q", r.code, r.stderr, g.lines())
		}
	})
}

// TestFleetEnrolCommands runs the join-token commands against a real
// gateway and checks their requests and output: token create, list and
// revoke; device pending, accept and reject.
func TestFleetEnrolCommands(t *testing.T) {
	t.Parallel()
	g := startFleetGateway(t)
	ctx := fleetCtx(t)
	var stderr string
	run := func(want []string, args ...string) string {
		t.Helper()
		f := g.front(t)
		r := chorus(ctx, f.env(), append([]string{"fleet"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit code = %d, stderr %s", args, r.code, r.stderr)
		}
		if got := f.lines(); !slices.Equal(got, want) {
			t.Errorf("%v: requests = %q, want %q", args, got, want)
		}
		stderr = r.stderr
		return r.stdout
	}
	out := run([]string{"POST /v1/join-tokens"}, "token", "create", "--tag", "kitchen", "--uses", "3", "--ttl", "2h")
	// The test gateway is on loopback: the CLI says satellites cannot use it.
	if !strings.Contains(stderr, "only this machine can reach") || !strings.Contains(stderr, "3 use(s)") {
		t.Errorf("token create stderr = %q; want the uses and the loopback warning", stderr)
	}
	tok, err := api.ParseJoinToken(out)
	if err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("token create printed %q: %v; want the token alone on stdout", out, err)
	}
	if out := run([]string{"GET /v1/join-tokens"}, "token", "list"); !strings.Contains(out, tok.ID) || !strings.Contains(out, "0/3") || !strings.Contains(out, "usable") {
		t.Errorf("token list = %q", out)
	}
	join := func(device string) string {
		t.Helper()
		res, err := g.m.Fleet().Join(ctx, "198.18.0.9", tok.ID, tok.Secret, device)
		if err != nil {
			t.Fatal(err)
		}
		return res.Pending.ID
	}
	pa, pb := join("pi-a"), join("pi-b")
	if out := run([]string{"GET /v1/pending-devices"}, "device", "pending"); !strings.Contains(out, pa) || !strings.Contains(out, "pi-b") || !strings.Contains(out, "198.18.0.9") {
		t.Errorf("device pending = %q", out)
	}
	if out := run([]string{"POST /v1/pending-devices/" + pa + "/accept"}, "device", "accept", pa); !strings.Contains(out, "device pi-a accepted") {
		t.Errorf("device accept = %q", out)
	}
	if out := run([]string{"POST /v1/pending-devices/" + pb + "/reject"}, "device", "reject", pb); !strings.Contains(out, "enrolment "+pb+" rejected") {
		t.Errorf("device reject = %q", out)
	}
	if out := run([]string{"DELETE /v1/join-tokens/" + tok.ID}, "token", "revoke", tok.ID); !strings.Contains(out, "join token "+tok.ID+" revoked") {
		t.Errorf("token revoke = %q", out)
	}
	if out := run([]string{"GET /v1/join-tokens"}, "token", "list"); !strings.Contains(out, "revoked") || !strings.Contains(out, "2/3") {
		t.Errorf("token list after revoke = %q", out)
	}
	// Bad input: a usage error before any request, and the gateway's message.
	f := g.front(t)
	if r := chorus(ctx, f.env(), "fleet", "token", "create", "--uses", "0"); r.code != 2 || !strings.Contains(r.stderr, "--uses") || len(f.lines()) != 0 {
		t.Errorf("--uses 0: code %d, stderr %q, requests %q", r.code, r.stderr, f.lines())
	}
	if r := chorus(ctx, f.env(), "fleet", "device", "accept", "p-nope"); r.code != 1 || !strings.Contains(r.stderr, "chorus fleet device pending") {
		t.Errorf("accept unknown: code %d, stderr %q", r.code, r.stderr)
	}
}
