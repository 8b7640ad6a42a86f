package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/httpapi"
)

// brokerAuthFleet is a fake of the broker-auth decisions and the exports;
// the embedded nil Fleet is never called by these endpoints.
type brokerAuthFleet struct {
	httpapi.Fleet
	secret string
}

func (f brokerAuthFleet) Secret() string { return f.secret }
func (f brokerAuthFleet) Authenticate(u, p string) (bool, bool) {
	return u == "pi-1" && p == "pw" || u == "controller" && p == "c", u == "controller"
}
func (f brokerAuthFleet) Authorize(u, topic, action string, retain bool) bool {
	return u == "pi-1" && action == "publish" && topic == "chorus/v1/pi-1/availability" && retain
}
func (f brokerAuthFleet) ExportMosquitto(context.Context) ([]byte, []byte, []string, error) {
	return []byte("pi-1:$7$x\n"), []byte("user pi-1\n"), nil, nil
}
func (f brokerAuthFleet) ExportMosquittoDynSec(context.Context) ([]byte, []string, error) {
	return []byte(`{"clients":[{"username":"skill:pi-1:s"}]}`), []string{"pi-2: no hash"}, nil
}

func TestBrokerAuthEndpoints(t *testing.T) {
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: brokerAuthFleet{secret: "s3"}, Token: "tok",
		Exports: brokerAuthFleet{}, BrokerAuth: brokerAuthFleet{secret: "s3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	call := func(method, path, secret, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL()+path, strings.NewReader(body))
		if secret != "" {
			req.Header.Set(httpapi.EMQXSecretHeader, secret)
		}
		if strings.HasPrefix(path, "/v1/export") {
			req.Header.Set("Authorization", "Bearer tok")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for _, c := range []struct {
		path, secret, body string
		code               int
		result             string
		super              any
	}{
		{"/v1/emqx/authn", "s3", `{"username":"pi-1","password":"pw","clientid":"x","extra":1}`, 200, "allow", false},
		{"/v1/emqx/authn", "s3", `{"username":"pi-1","password":"no"}`, 200, "deny", false},
		{"/v1/emqx/authn", "s3", `{"username":"controller","password":"c"}`, 200, "allow", true},
		{"/v1/emqx/authn", "wrong", `{"username":"pi-1","password":"pw"}`, 401, "", nil},
		{"/v1/emqx/authn", "", `{"username":"pi-1","password":"pw"}`, 401, "", nil},
		{"/v1/emqx/authn", "s3", `not json`, 400, "", nil},
		{"/v1/emqx/authz", "s3", `{"username":"pi-1","topic":"chorus/v1/pi-1/availability","action":"publish","retain":true}`, 200, "allow", nil},
		{"/v1/emqx/authz", "s3", `{"username":"pi-1","topic":"chorus/v1/pi-1/availability","action":"publish","retain":"true"}`, 200, "allow", nil},
		{"/v1/emqx/authz", "s3", `{"username":"pi-1","topic":"chorus/v1/pi-1/availability","action":"publish"}`, 200, "deny", nil},
		{"/v1/emqx/authz", "s3", `{"username":"pi-1","topic":"chorus/v1/pi-1/availability","action":"subscribe"}`, 200, "deny", nil},
	} {
		code, out := call(http.MethodPost, c.path, c.secret, c.body)
		if code != c.code || (c.result != "" && out["result"] != c.result) || (c.super != nil && out["is_superuser"] != c.super) {
			t.Errorf("%s %s: %d %v; want %d %s super=%v", c.path, c.body, code, out, c.code, c.result, c.super)
		}
	}
	code, out := call(http.MethodGet, "/v1/export/mosquitto", "", "")
	if code != 200 || out["password_file"] != "pi-1:$7$x\n" || out["acl_file"] != "user pi-1\n" {
		t.Fatalf("export: %d %v", code, out)
	}
	code, out = call(http.MethodGet, "/v1/export/mosquitto/dynsec", "", "")
	ds, _ := out["dynamic_security"].(map[string]any)
	if code != 200 || ds["clients"] == nil || len(out["skipped"].([]any)) != 1 {
		t.Fatalf("dynsec export: %d %v", code, out)
	}

	// No secret configured: the endpoints are off.
	off, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: brokerAuthFleet{}, Token: "tok", BrokerAuth: brokerAuthFleet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(context.Background())
	resp, err := http.Post(off.URL()+"/v1/emqx/authn", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("authn without a secret: %d, want 404", resp.StatusCode)
	}
}
