package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/artifact"
)

const token = "test-token"

func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description, Requirements: s.Requirements}, nil
}

// start runs a broker, a controller over a real SQLite file and the HTTP server.
func start(t *testing.T) (*httpapi.Server, *controller.Controller) {
	t.Helper()
	dir := t.TempDir()
	b := brokertest.Start(t, broker.Config{})
	db, err := sqlite.Open(filepath.Join(dir, "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: db, Broker: b, ArtifactDir: filepath.Join(dir, "artifacts"),
		ValidateSkill: validateSkill, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: ctl, Token: token, VerifyDevice: ctl.VerifyDevice})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close(context.Background())
		ctl.Close()
		db.Close()
	})
	return srv, ctl
}

type call struct {
	method, path, body string
	auth               func(*http.Request)
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func do(t *testing.T, srv *httpapi.Server, c call, raw []byte) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader = strings.NewReader(c.body)
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(c.method, srv.URL()+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.auth != nil {
		c.auth(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func errorCode(b []byte) string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Code
}

func skillArchive(t testing.TB, name, version string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	doc := fmt.Sprintf("---\nname: %s\ndescription: Says hello.\nversion: %s\nexec: run.sh\n---\n", name, version)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644)
	var buf bytes.Buffer
	if _, err := artifact.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestErrorMapping(t *testing.T) {
	srv, _ := start(t)
	op := bearer(token)
	do(t, srv, call{"POST", "/v1/devices", `{"id":"pi-1","tags":["kitchen"]}`, op}, nil)
	tests := []struct {
		name   string
		c      call
		status int
		code   string
	}{
		{"no token", call{"GET", "/v1/devices", "", nil}, 401, "unauthorized"},
		{"wrong token", call{"GET", "/v1/devices", "", bearer("nope")}, 401, "unauthorized"},
		{"bad id", call{"POST", "/v1/devices", `{"id":"-bad"}`, op}, 400, "invalid"},
		{"unknown field", call{"POST", "/v1/devices", `{"id":"pi-9","tagz":[]}`, op}, 400, "invalid"},
		{"not json", call{"POST", "/v1/devices", `{`, op}, 400, "invalid"},
		{"exists", call{"POST", "/v1/devices", `{"id":"pi-1"}`, op}, 409, "conflict"},
		{"unknown device", call{"GET", "/v1/devices/pi-9", "", op}, 404, "not_found"},
		{"unknown rollout", call{"GET", "/v1/rollouts/42", "", op}, 404, "not_found"},
		{"bad rollout id", call{"GET", "/v1/rollouts/x", "", op}, 400, "invalid"},
		{"unknown rollout, counts", call{"GET", "/v1/rollouts/42?executions=false", "", op}, 404, "not_found"},
		{"bad executions", call{"GET", "/v1/rollouts/42?executions=no", "", op}, 400, "invalid"},
		{"bad online", call{"GET", "/v1/devices?online=yes", "", op}, 400, "invalid"},
		{"unknown skill", call{"POST", "/v1/rollouts", `{"skill_id":"nope.x","action":"install","targets":[{"kind":"all"}]}`, op}, 404, "not_found"},
		{"bad timeout", call{"POST", "/v1/rollouts", `{"skill_id":"a","action":"install","targets":[{"kind":"all"}],"strategy":{"timeout":"soon"}}`, op}, 400, "invalid"},
		{"resolve typo", call{"GET", "/v1/skills/resolve?q=wether", "", op}, 404, "not_found"},
		{"too large", call{"POST", "/v1/devices", `{"id":"` + strings.Repeat("a", 2<<20) + `"}`, op}, 413, "too_large"},
		{"no endpoint", call{"GET", "/v1/nothing", "", op}, 404, "not_found"},
		{"pause unknown", call{"POST", "/v1/rollouts/7/pause", "", op}, 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, srv, tc.c, nil)
			if resp.StatusCode != tc.status || errorCode(b) != tc.code {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, b, tc.status, tc.code)
			}
		})
	}
	if resp, _ := do(t, srv, call{"GET", "/healthz", "", nil}, nil); resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
}

func TestDevicesAndSkillsAPI(t *testing.T) {
	srv, _ := start(t)
	op := bearer(token)
	resp, b := do(t, srv, call{"POST", "/v1/devices", `{"id":"pi-1","tags":["kitchen"]}`, op}, nil)
	var added struct {
		Device      map[string]any
		Credentials struct{ Device, Username, Password, SkillKey string }
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &added) != nil || added.Credentials.Password == "" {
		t.Fatalf("add device: %d %s", resp.StatusCode, b)
	}
	for _, k := range []string{"online", "skills_loaded", "skills_desired", "drift", "desired_version"} {
		if _, ok := added.Device[k]; !ok {
			t.Errorf("device has no %q: %s", k, b)
		}
	}
	resp, b = do(t, srv, call{"POST", "/v1/skills", "", op}, skillArchive(t, "hello.test", "1.0.0"))
	if resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, srv, call{"POST", "/v1/skills", "", op}, []byte("not gzip"))
	if resp.StatusCode != 400 || !strings.Contains(string(b), "archive refused") {
		t.Fatalf("publish invalid: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, srv, call{"GET", "/v1/skills/search?q=hello", "", op}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"hello.test"`) {
		t.Fatalf("search: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, srv, call{"POST", "/v1/rollouts", `{"skill_id":"hello.test","action":"install","targets":[{"kind":"tag","value":"kitchen"}],"strategy":{"canary":1,"timeout":"10m"}}`, op}, nil)
	if resp.StatusCode != 201 || !strings.Contains(string(b), `"timeout":"10m0s"`) || !strings.Contains(string(b), `"timed_out":0`) {
		t.Fatalf("create rollout: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, srv, call{"GET", "/v1/rollouts/1", "", op}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"device_id":"pi-1"`) {
		t.Fatalf("get rollout: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, srv, call{"GET", "/v1/audit?limit=50", "", op}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"rollout.create"`) {
		t.Fatalf("audit: %d %s", resp.StatusCode, b)
	}
	if resp, b = do(t, srv, call{"DELETE", "/v1/devices/pi-1", "", op}, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
}

func TestArtifactDownload(t *testing.T) {
	srv, ctl := start(t)
	ctx := context.Background()
	archive := skillArchive(t, "hello.test", "1.0.0")
	v, err := ctl.PublishSkill(ctx, "test", bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	_, creds, err := ctl.AddDevice(ctx, "test", "pi-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := ctl.AddDevice(ctx, "test", "pi-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Only pi-1's desired document names the archive (issue 16 §7).
	if _, err := ctl.RequestSkills(ctx, "pi-1", fleet.AssignInstall, []string{"hello.test"}); err != nil {
		t.Fatal(err)
	}
	path := "/v1/artifacts/" + v.SHA256
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	tests := []struct {
		name   string
		auth   func(*http.Request)
		rng    string
		status int
		body   []byte
	}{
		{"device", basic("pi-1", creds.Password), "", 200, archive},
		{"range", basic("pi-1", creds.Password), "bytes=10-19", 206, archive[10:20]},
		{"another device's artifact", basic("pi-2", other.Password), "", 404, nil},
		{"wrong secret", basic("pi-1", "nope"), "", 401, nil},
		{"unknown device", basic("pi-9", creds.Password), "", 401, nil},
		{"operator token", bearer(token), "", 401, nil},
		{"none", nil, "", 401, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			auth := tc.auth
			if tc.rng != "" {
				auth = func(r *http.Request) { tc.auth(r); r.Header.Set("Range", tc.rng) }
			}
			resp, b := do(t, srv, call{"GET", path, "", auth}, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			if tc.body != nil && !bytes.Equal(b, tc.body) {
				t.Fatalf("body differs (%d bytes, want %d)", len(b), len(tc.body))
			}
		})
	}
	resp, b := do(t, srv, call{"GET", "/v1/artifacts/" + strings.Repeat("0", 64), "", basic("pi-1", creds.Password)}, nil)
	if resp.StatusCode != 404 || errorCode(b) != "not_found" {
		t.Fatalf("unknown artifact: %d %s", resp.StatusCode, b)
	}
}

// /healthz says "degraded" with 503 and names what fails, so a load
// balancer or systemd watchdog sees a broken gateway that still answers HTTP.
func TestHealthzDegraded(t *testing.T) {
	var failing []string
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Failing: func() []string { return failing }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	get := func() (int, api.Health) {
		resp, err := http.Get("http://" + srv.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h api.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, h
	}
	if code, h := get(); code != 200 || h.Status != "ok" || len(h.Failing) != 0 {
		t.Fatalf("healthy: %d %+v", code, h)
	}
	failing = []string{"mqtt listener mqtt (127.0.0.1:1883): accept4: too many open files"}
	if code, h := get(); code != 503 || h.Status != "degraded" || len(h.Failing) != 1 {
		t.Fatalf("failing: %d %+v", code, h)
	}
}
