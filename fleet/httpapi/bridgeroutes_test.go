package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/httpapi"
)

// routesEnv enrols hub, pi-kitchen and pi-bedroom.
func routesEnv(t *testing.T) *httpapi.Server {
	t.Helper()
	srv, ctl := start(t)
	for _, id := range []string{"hub", "pi-kitchen", "pi-bedroom"} {
		if _, _, err := ctl.AddDevice(context.Background(), "test", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func errorMessage(b []byte) string {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Message
}

func listRoutes(t *testing.T, srv *httpapi.Server) (raw string, routes []fleet.Route) {
	t.Helper()
	resp, b := do(t, srv, call{"GET", "/v1/routes", "", bearer(token)}, nil)
	var out struct{ Routes []fleet.Route }
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.Routes == nil {
		t.Fatalf("list routes: %d %s", resp.StatusCode, b)
	}
	return string(b), out.Routes
}

func TestRoutesAPIAddListRemove(t *testing.T) {
	srv := routesEnv(t)
	op := bearer(token)
	if raw, _ := listRoutes(t, srv); raw != `{"routes":[]}`+"\n" {
		t.Fatalf("empty list = %s", raw)
	}

	resp, b := do(t, srv, call{"PUT", "/v1/routes/pi-kitchen", `{"hub":"hub"}`, op}, nil)
	var put struct{ Route fleet.Route }
	if resp.StatusCode != 200 || json.Unmarshal(b, &put) != nil {
		t.Fatalf("put: %d %s", resp.StatusCode, b)
	}
	got := put.Route
	if got.Satellite != "pi-kitchen" || got.Hub != "hub" || got.Allow == nil || len(got.Allow) != 0 ||
		got.BlacklistedSkills == nil || got.BlacklistedIntents == nil || got.CreatedAt.IsZero() {
		t.Fatalf("put answered %s", b)
	}

	// Replacing keeps created_at and normalises the lists (sorted, no duplicates).
	resp, b = do(t, srv, call{"PUT", "/v1/routes/pi-kitchen", `{"hub":"hub","allow":["speak","ovos.utterance.handle","speak"],
		"blacklisted_skills":["music.skill"],"blacklisted_intents":["timer.skill:set"]}`, op}, nil)
	if resp.StatusCode != 200 || json.Unmarshal(b, &put) != nil {
		t.Fatalf("replace: %d %s", resp.StatusCode, b)
	}
	if r := put.Route; strings.Join(r.Allow, ",") != "ovos.utterance.handle,speak" || strings.Join(r.BlacklistedSkills, ",") != "music.skill" ||
		strings.Join(r.BlacklistedIntents, ",") != "timer.skill:set" || !r.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("replace answered %s (created_at was %s)", b, got.CreatedAt)
	}
	if resp, b = do(t, srv, call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub"}`, op}, nil); resp.StatusCode != 200 {
		t.Fatalf("second route: %d %s", resp.StatusCode, b)
	}

	_, routes := listRoutes(t, srv)
	if len(routes) != 2 || routes[0].Satellite != "pi-bedroom" || routes[1].Satellite != "pi-kitchen" ||
		strings.Join(routes[1].Allow, ",") != "ovos.utterance.handle,speak" {
		t.Fatalf("list = %+v, want pi-bedroom then pi-kitchen with its new policy", routes)
	}

	if resp, b = do(t, srv, call{"DELETE", "/v1/routes/pi-kitchen", "", op}, nil); resp.StatusCode != 204 || len(b) != 0 {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	if _, routes = listRoutes(t, srv); len(routes) != 1 || routes[0].Satellite != "pi-bedroom" {
		t.Fatalf("after delete: %+v", routes)
	}
	resp, b = do(t, srv, call{"DELETE", "/v1/routes/pi-kitchen", "", op}, nil)
	if resp.StatusCode != 404 || errorCode(b) != "not_found" || !strings.Contains(errorMessage(b), `no route for satellite "pi-kitchen"`) {
		t.Fatalf("delete again: %d %s", resp.StatusCode, b)
	}

	// Removing the hub device removes its routes.
	if resp, b = do(t, srv, call{"DELETE", "/v1/devices/hub", "", op}, nil); resp.StatusCode != 204 {
		t.Fatalf("delete hub: %d %s", resp.StatusCode, b)
	}
	if raw, _ := listRoutes(t, srv); raw != `{"routes":[]}`+"\n" {
		t.Fatalf("after removing the hub: %s", raw)
	}
}

// TestRoutesAPIBadInput: every bad request is a 4xx with a code and a
// message saying what is wrong, and changes no route.
func TestRoutesAPIBadInput(t *testing.T) {
	srv := routesEnv(t)
	op := bearer(token)
	if resp, b := do(t, srv, call{"PUT", "/v1/routes/pi-kitchen", `{"hub":"hub","blacklisted_skills":["music.skill"]}`, op}, nil); resp.StatusCode != 200 {
		t.Fatalf("setup: %d %s", resp.StatusCode, b)
	}
	before, _ := listRoutes(t, srv)

	tests := []struct {
		name     string
		c        call
		status   int
		code     string
		wantText string // in the error message
	}{
		{"unknown satellite", call{"PUT", "/v1/routes/pi-attic", `{"hub":"hub"}`, op}, 404, "not_found", `device "pi-attic" not found`},
		{"unknown hub", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub-2"}`, op}, 404, "not_found", `device "hub-2" not found`},
		{"own hub", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"pi-bedroom"}`, op}, 400, "invalid", "a device cannot be its own hub"},
		{"replace with own hub", call{"PUT", "/v1/routes/pi-kitchen", `{"hub":"pi-kitchen"}`, op}, 400, "invalid", "a device cannot be its own hub"},
		{"no hub", call{"PUT", "/v1/routes/pi-bedroom", `{}`, op}, 400, "invalid", `route pi-bedroom: hub: device id "": empty`},
		{"bad satellite id", call{"PUT", "/v1/routes/-bad", `{"hub":"hub"}`, op}, 400, "invalid", `"-bad"`},
		{"malformed JSON", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":`, op}, 400, "invalid", "request body"},
		{"not an object", call{"PUT", "/v1/routes/pi-bedroom", `["hub"]`, op}, 400, "invalid", "request body"},
		{"empty body", call{"PUT", "/v1/routes/pi-bedroom", ``, op}, 400, "invalid", "want a JSON object"},
		{"two values", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub"}{}`, op}, 400, "invalid", "more than one JSON value"},
		{"unknown field", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allowed":["speak"]}`, op}, 400, "invalid", `unknown field "allowed"`},
		{"allow not a list", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allow":"speak"}`, op}, 400, "invalid", "request body"},
		{"type with slash", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allow":["ovos/utterance"]}`, op}, 400, "invalid",
			"cannot be part of one MQTT topic level"},
		{"type with plus", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allow":["speak+"]}`, op}, 400, "invalid", "cannot be part of one MQTT topic level"},
		{"type wildcard", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allow":["#"]}`, op}, 400, "invalid", "cannot be part of one MQTT topic level"},
		{"empty type", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","allow":[""]}`, op}, 400, "invalid", "empty"},
		{"bad blacklisted skill", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","blacklisted_skills":["bad skill"]}`, op}, 400, "invalid", "blacklisted skill"},
		{"empty blacklisted intent", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub","blacklisted_intents":[""]}`, op}, 400, "invalid", "blacklisted intent"},
		{"satellite is a hub", call{"PUT", "/v1/routes/hub", `{"hub":"pi-bedroom"}`, op}, 409, "conflict", "a satellite cannot be a hub"},
		{"hub is a satellite", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"pi-kitchen"}`, op}, 409, "conflict", "a hub cannot be a satellite"},
		{"remove unknown route", call{"DELETE", "/v1/routes/pi-bedroom", "", op}, 404, "not_found", "no route for satellite"},
		{"remove bad id", call{"DELETE", "/v1/routes/-bad", "", op}, 400, "invalid", `"-bad"`},
		{"no token", call{"PUT", "/v1/routes/pi-bedroom", `{"hub":"hub"}`, nil}, 401, "unauthorized", ""},
		{"wrong token", call{"DELETE", "/v1/routes/pi-kitchen", "", bearer("nope")}, 401, "unauthorized", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, srv, tc.c, nil)
			if resp.StatusCode != tc.status || errorCode(b) != tc.code || !strings.Contains(errorMessage(b), tc.wantText) {
				t.Errorf("%d %s, want %d %s with %q", resp.StatusCode, b, tc.status, tc.code, tc.wantText)
			}
			if after, _ := listRoutes(t, srv); after != before {
				t.Errorf("routes changed:\n got %s\nwant %s", after, before)
			}
		})
	}
}
