package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
)

func basic(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }

// deviceRequestEnv publishes hello.test 1.0.0 and 1.1.0 and enrols pi-1 and pi-2.
func deviceRequestEnv(t *testing.T) (srv *httpapi.Server, ctl *controller.Controller, pass map[string]string) {
	t.Helper()
	srv, ctl = start(t)
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := ctl.PublishSkill(ctx, "test", bytes.NewReader(skillArchive(t, "hello.test", v))); err != nil {
			t.Fatal(err)
		}
	}
	pass = map[string]string{}
	for _, id := range []string{"pi-1", "pi-2"} {
		_, creds, err := ctl.AddDevice(ctx, "test", id, nil)
		if err != nil {
			t.Fatal(err)
		}
		pass[id] = creds.Password
	}
	return srv, ctl, pass
}

func requestSkills(t *testing.T, srv *httpapi.Server, auth func(*http.Request), body string) (int, api.DeviceSkillsResponse, []byte) {
	t.Helper()
	resp, b := do(t, srv, call{"POST", "/v1/device/skills", body, auth}, nil)
	var out api.DeviceSkillsResponse
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
	}
	return resp.StatusCode, out, b
}

func desiredOf(t *testing.T, ctl *controller.Controller, id string) fleet.Desired {
	t.Helper()
	d, err := ctl.DesiredOf(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A device installs and uninstalls on itself; the answer is the desired
// document that holds the change, and the audit log names the device.
func TestDeviceSkillsInstallUninstall(t *testing.T) {
	srv, ctl, pass := deviceRequestEnv(t)
	pi1 := basic("pi-1", pass["pi-1"])

	status, got, b := requestSkills(t, srv, pi1, `{"action":"install","packages":["hello.test@1.0.0"]}`)
	if status != 200 || got.Skills["hello.test"].Version != "1.0.0" || got.DesiredVersion == 0 {
		t.Fatalf("install pinned: %d %s", status, b)
	}
	if want := desiredOf(t, ctl, "pi-1"); want.Version != got.DesiredVersion {
		t.Fatalf("answered version %d, desired document is %d", got.DesiredVersion, want.Version)
	}
	v1 := got.DesiredVersion

	status, got, b = requestSkills(t, srv, pi1, `{"action":"install","packages":["hello.test"]}`)
	if status != 200 || got.Skills["hello.test"].Version != "1.1.0" || got.DesiredVersion <= v1 {
		t.Fatalf("install latest: %d %s (previous version %d)", status, b, v1)
	}
	v2 := got.DesiredVersion

	// The same request again changes nothing: same version.
	if status, got, b = requestSkills(t, srv, pi1, `{"action":"install","packages":["hello.test"]}`); status != 200 || got.DesiredVersion != v2 {
		t.Fatalf("install again: %d %s, want version %d", status, b, v2)
	}

	status, got, b = requestSkills(t, srv, pi1, `{"action":"uninstall","packages":["hello.test"]}`)
	if status != 200 || len(got.Skills) != 0 || got.DesiredVersion <= v2 || !strings.Contains(string(b), `"skills":{}`) {
		t.Fatalf("uninstall: %d %s", status, b)
	}

	entries, err := ctl.ListAudit(context.Background(), fleet.AuditFilter{Subject: "device/pi-1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, e := range entries {
		actions[e.Action] = e.Actor
	}
	for _, a := range []string{"device.skills.install", "device.skills.uninstall"} {
		if actions[a] != "device:pi-1" {
			t.Errorf("audit %s by %q, want device:pi-1 (%v)", a, actions[a], actions)
		}
	}
}

// A device only ever changes its own assignments: the body names no
// device, and another device's username needs that device's secret.
func TestDeviceSkillsOnlyOwnDevice(t *testing.T) {
	srv, ctl, pass := deviceRequestEnv(t)
	pi1, pi2 := basic("pi-1", pass["pi-1"]), basic("pi-2", pass["pi-2"])
	if status, _, b := requestSkills(t, srv, pi2, `{"action":"install","packages":["hello.test"]}`); status != 200 {
		t.Fatalf("pi-2 install: %d %s", status, b)
	}
	before := desiredOf(t, ctl, "pi-2")

	tests := []struct {
		name   string
		auth   func(*http.Request)
		path   string
		body   string
		status int
	}{
		{"device field", pi1, "/v1/device/skills", `{"action":"uninstall","packages":["hello.test"],"device":"pi-2"}`, 400},
		{"target field", pi1, "/v1/device/skills", `{"action":"uninstall","packages":["hello.test"],"target":{"kind":"device","value":"pi-2"}}`, 400},
		{"query", pi1, "/v1/device/skills?device=pi-2", `{"action":"uninstall","packages":["hello.test"]}`, 200},
		{"other username", basic("pi-2", pass["pi-1"]), "/v1/device/skills", `{"action":"uninstall","packages":["hello.test"]}`, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, srv, call{"POST", tc.path, tc.body, tc.auth}, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.status)
			}
		})
	}
	after := desiredOf(t, ctl, "pi-2")
	if after.Version != before.Version || after.Skills["hello.test"].Version != "1.1.0" {
		t.Fatalf("pi-2's desired document changed: %+v, was %+v", after, before)
	}
	// The query case acted on pi-1, the authenticated device.
	as, err := ctl.ListAudit(context.Background(), fleet.AuditFilter{Subject: "device/pi-1"}, 0)
	if err != nil || len(as) == 0 || as[0].Action != "device.skills.uninstall" || as[0].Actor != "device:pi-1" {
		t.Fatalf("pi-1 audit: %v %+v", err, as)
	}
}

// The endpoint takes a device's own Basic credentials and nothing else.
func TestDeviceSkillsAuth(t *testing.T) {
	srv, ctl, pass := deviceRequestEnv(t)
	_, opCreds, err := ctl.AddOperator(context.Background(), "test", "alice")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"action":"install","packages":["hello.test"]}`
	tests := []struct {
		name string
		auth func(*http.Request)
	}{
		{"operator token", bearer(token)},
		{"operator mqtt credentials", basic(opCreds.Username, opCreds.Password)},
		{"wrong secret", basic("pi-1", "nope")},
		{"unknown device", basic("pi-9", pass["pi-1"])},
		{"none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := requestSkills(t, srv, tc.auth, body)
			if status != 401 || errorCode(b) != "unauthorized" {
				t.Fatalf("%d %s, want 401 unauthorized", status, b)
			}
		})
	}
	if d := desiredOf(t, ctl, "pi-1"); len(d.Skills) != 0 {
		t.Fatalf("refused requests changed pi-1: %+v", d)
	}
}

// Bad requests are refused with a clear message and change nothing, even
// when some of the packages are good.
func TestDeviceSkillsBadRequests(t *testing.T) {
	srv, ctl, pass := deviceRequestEnv(t)
	pi1 := basic("pi-1", pass["pi-1"])
	before := desiredOf(t, ctl, "pi-1")
	tests := []struct {
		name, body string
		status     int
		code, msg  string
	}{
		{"unknown skill", `{"action":"install","packages":["hello.test","nope.x"]}`, 404, "not_found", "nope.x"},
		{"unknown version", `{"action":"install","packages":["hello.test@9.9.9"]}`, 404, "not_found", "9.9.9"},
		{"empty version", `{"action":"install","packages":["hello.test@"]}`, 400, "invalid", "id@version"},
		{"no packages", `{"action":"install","packages":[]}`, 400, "invalid", "packages"},
		{"bad action", `{"action":"upgrade","packages":["hello.test"]}`, 400, "invalid", "install or uninstall"},
		{"configure", `{"action":"configure","packages":["hello.test"]}`, 400, "invalid", "install or uninstall"},
		{"no body", ``, 400, "invalid", "JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := requestSkills(t, srv, pi1, tc.body)
			if status != tc.status || errorCode(b) != tc.code || !strings.Contains(string(b), tc.msg) {
				t.Fatalf("%d %s, want %d %s mentioning %q", status, b, tc.status, tc.code, tc.msg)
			}
		})
	}
	if after := desiredOf(t, ctl, "pi-1"); after.Version != before.Version || len(after.Skills) != 0 {
		t.Fatalf("refused requests changed pi-1: %+v", after)
	}
}
