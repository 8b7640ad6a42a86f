package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// fakeGateway is a minimal in-memory implementation of docs/api.md, enough
// to drive the CLI: the real server is tested in fleet/httpapi. It records
// every request so tests can assert methods, paths, bodies and auth.
type fakeGateway struct {
	srv   *httptest.Server
	token string

	mu           sync.Mutex
	reqs         []fakeReq
	devices      []api.Device
	integrations []fleet.Integration
	operators    []fleet.Operator
	skills       []fleet.SkillVersion
	rollouts     []api.Rollout
	// script is what successive GET /v1/rollouts/{id} answer for a rollout
	// created here; the last one repeats.
	script     []api.RolloutDetail
	scriptNext int
}

type fakeReq struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   []byte
}

// line is "METHOD /path?query".
func (r fakeReq) line() string {
	if r.Query == "" {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query
}

var fakeTime = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

func newFakeGateway(t *testing.T) *fakeGateway {
	t.Helper()
	g := &fakeGateway{token: "tok-123"}
	g.devices = []api.Device{
		{ID: "kitchen", Tags: []string{"home"}, Online: true, LastSeen: fakeTime, AgentVersion: "0.1.0",
			Connectivity: json.RawMessage(`{"network":true,"internet":false,"gui":true}`),
			SkillsLoaded: 2, SkillsDesired: 3, AppliedVersion: 4, DesiredVersion: 5, Drift: true, CreatedAt: fakeTime},
		{ID: "hall", Tags: []string{"home", "quiet"}, CreatedAt: fakeTime},
	}
	g.skills = []fleet.SkillVersion{
		{SkillID: "hello.chorus", Version: "1.0.0", SHA256: strings.Repeat("a", 64), Size: 417, Title: "hello.chorus",
			Description: "Answers hello", Requirements: []string{}, PublishedAt: fakeTime},
		{SkillID: "weather.chorus", Version: "2.1.0", SHA256: strings.Repeat("b", 64), Size: 900, Title: "weather.chorus",
			Description: "Tells the weather", Requirements: []string{"internet"}, PublishedAt: fakeTime},
	}
	g.integrations = []fleet.Integration{{Name: "ha", Allow: []string{"speak"}}}
	g.operators = []fleet.Operator{{Name: "ops"}}
	g.rollouts = []api.Rollout{{ID: 7, SkillID: "hello.chorus", Version: "1.0.0", Action: "install",
		Targets: []fleet.Target{{Kind: "tag", Value: "home"}}, State: "in_progress",
		Counts: api.Counts{Succeeded: 1, InProgress: 1}, CreatedAt: fakeTime, UpdatedAt: fakeTime}}
	g.srv = httptest.NewServer(g.routes())
	t.Cleanup(g.srv.Close)
	return g
}

// env is the environment that points the CLI at g.
func (g *fakeGateway) env() map[string]string {
	return map[string]string{"CHORUS_SERVER": g.srv.URL, "CHORUS_TOKEN": g.token}
}

func (g *fakeGateway) requests() []fakeReq {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reqs)
}

func (g *fakeGateway) lines() []string {
	var out []string
	for _, r := range g.requests() {
		out = append(out, r.line())
	}
	return out
}

func (g *fakeGateway) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/devices", g.listDevices)
	mux.HandleFunc("POST /v1/devices", g.addDevice)
	mux.HandleFunc("GET /v1/devices/{id}", g.withDevice(func(w http.ResponseWriter, _ *http.Request, d *api.Device) {
		fakeReply(w, 200, map[string]any{"device": d})
	}))
	mux.HandleFunc("DELETE /v1/devices/{id}", g.removeDevice)
	mux.HandleFunc("PUT /v1/devices/{id}/tags", g.withDevice(func(w http.ResponseWriter, r *http.Request, d *api.Device) {
		var body struct{ Tags []string }
		if !fakeDecode(w, r, &body) {
			return
		}
		d.Tags = body.Tags
		fakeReply(w, 200, map[string]any{"device": d})
	}))
	mux.HandleFunc("POST /v1/devices/{id}/rotate", g.withDevice(func(w http.ResponseWriter, _ *http.Request, d *api.Device) {
		fakeReply(w, 200, api.Enrolled{Device: *d, Credentials: g.creds(d.ID, "rotated")})
	}))
	mux.HandleFunc("GET /v1/integrations", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"integrations": g.integrations})
	})
	mux.HandleFunc("POST /v1/integrations", func(w http.ResponseWriter, r *http.Request) {
		var in fleet.Integration
		if fakeDecode(w, r, &in) {
			fakeReply(w, 201, api.IntegrationAdded{Integration: in, Credentials: configs.Credential{Username: "integration:" + in.Name, Password: "pw-" + in.Name}})
		}
	})
	mux.HandleFunc("DELETE /v1/integrations/{name}", g.noContent)
	mux.HandleFunc("GET /v1/operators", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"operators": g.operators})
	})
	mux.HandleFunc("POST /v1/operators", func(w http.ResponseWriter, r *http.Request) {
		var in fleet.Operator
		if fakeDecode(w, r, &in) {
			fakeReply(w, 201, api.OperatorAdded{Operator: in, Credentials: configs.Credential{Username: "operator:" + in.Name, Password: "pw-" + in.Name}})
		}
	})
	mux.HandleFunc("DELETE /v1/operators/{name}", g.noContent)
	g.skillRoutes(mux)
	g.rolloutRoutes(mux)
	mux.HandleFunc("GET /v1/audit", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"entries": []fleet.AuditEntry{
			{ID: 1, At: fakeTime, Actor: "operator:admin", Action: "device.add", Subject: "device/kitchen", Detail: json.RawMessage(`{"tags": ["home"]}`)},
		}})
	})
	return g.record(mux)
}

// record logs the request and checks the operator token, as every /v1
// route of docs/api.md does.
func (g *fakeGateway) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		g.mu.Lock()
		g.reqs = append(g.reqs, fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: body})
		g.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+g.token {
			fakeAPIError(w, 401, "unauthorized", "missing or wrong operator token")
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func fakeReply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fakeAPIError(w http.ResponseWriter, status int, code, msg string) {
	fakeReply(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func fakeDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Header.Get("Content-Type") != "application/json" {
		fakeAPIError(w, 400, "invalid", "want Content-Type application/json")
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fakeAPIError(w, 400, "invalid", "body: "+err.Error())
		return false
	}
	return true
}

func (g *fakeGateway) noContent(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }

func (g *fakeGateway) creds(id, secret string) configs.AgentCredentials {
	return configs.AgentCredentials{Device: id, MQTTURL: "mqtt://127.0.0.1:1883", ServerURL: g.srv.URL,
		Username: id, Password: secret + "-" + id, SkillKey: base64.StdEncoding.EncodeToString(make([]byte, 32)), KeyVersion: 1}
}

func (g *fakeGateway) listDevices(w http.ResponseWriter, r *http.Request) {
	out := []api.Device{}
	for _, d := range g.devices {
		if tag := r.URL.Query().Get("tag"); tag == "" || slices.Contains(d.Tags, tag) {
			out = append(out, d)
		}
	}
	fakeReply(w, 200, map[string]any{"devices": out})
}

func (g *fakeGateway) addDevice(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	}
	if !fakeDecode(w, r, &in) {
		return
	}
	if in.ID == "" || strings.ContainsAny(in.ID, " /") || in.ID == "gateway" {
		fakeAPIError(w, 400, "invalid", fmt.Sprintf("id %q: want [A-Za-z0-9._-], 1 to 64 characters", in.ID))
		return
	}
	if g.device(in.ID) != nil {
		fakeAPIError(w, 409, "conflict", fmt.Sprintf("device %s already exists", in.ID))
		return
	}
	d := api.Device{ID: in.ID, Tags: in.Tags, CreatedAt: fakeTime}
	g.devices = append(g.devices, d)
	fakeReply(w, 201, api.Enrolled{Device: d, Credentials: g.creds(d.ID, "secret")})
}

func (g *fakeGateway) device(id string) *api.Device {
	for i := range g.devices {
		if g.devices[i].ID == id {
			return &g.devices[i]
		}
	}
	return nil
}

func (g *fakeGateway) withDevice(h func(http.ResponseWriter, *http.Request, *api.Device)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := g.device(r.PathValue("id"))
		if d == nil {
			fakeAPIError(w, 404, "not_found", fmt.Sprintf("device %s not found", r.PathValue("id")))
			return
		}
		h(w, r, d)
	}
}

func (g *fakeGateway) removeDevice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if g.device(id) == nil {
		fakeAPIError(w, 404, "not_found", fmt.Sprintf("device %s not found", id))
		return
	}
	g.devices = slices.DeleteFunc(g.devices, func(d api.Device) bool { return d.ID == id })
	w.WriteHeader(204)
}

func (g *fakeGateway) skillRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/skills", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/gzip" || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
			fakeAPIError(w, 400, "invalid", "archive: not gzip")
			return
		}
		sum := sha256.Sum256(body)
		sv := fleet.SkillVersion{SkillID: "hello.chorus", Version: "1.0.0", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(body)), PublishedAt: fakeTime}
		fakeReply(w, 201, map[string]any{"skill": sv})
	})
	mux.HandleFunc("GET /v1/skills", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"skills": g.skills})
	})
	mux.HandleFunc("GET /v1/skills/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, s := range g.skills {
			if s.SkillID == r.PathValue("id") {
				fakeReply(w, 200, api.SkillDetail{Skill: s, Versions: []fleet.SkillVersion{s}})
				return
			}
		}
		fakeAPIError(w, 404, "not_found", fmt.Sprintf("skill %s not found", r.PathValue("id")))
	})
	mux.HandleFunc("GET /v1/skills/search", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"results": []api.SearchResult{{Skill: g.skills[1], Score: 1.5}}})
	})
	// resolve: an id, or a one-word name that is an id's first label; else
	// the suggestion of docs/api.md.
	mux.HandleFunc("GET /v1/skills/resolve", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		if q == "chorus" {
			fakeAPIError(w, 400, "invalid", `"chorus" is ambiguous: hello.chorus, weather.chorus`)
			return
		}
		for _, s := range g.skills {
			if s.SkillID == q || strings.TrimSuffix(s.SkillID, ".chorus") == q {
				fakeReply(w, 200, map[string]any{"skill": s})
				return
			}
		}
		fakeAPIError(w, 404, "not_found", fmt.Sprintf("no skill matches %q: did you mean weather.chorus?", q))
	})
	mux.HandleFunc("PUT /v1/skills/{id}/config", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Target   fleet.Target    `json:"target"`
			Settings json.RawMessage `json:"settings"`
		}
		if fakeDecode(w, r, &in) {
			fakeReply(w, 200, map[string]any{"assignment": map[string]any{"id": 3, "skill_id": r.PathValue("id"), "target": in.Target, "settings": in.Settings}})
		}
	})
}

func (g *fakeGateway) rolloutRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/rollouts", func(w http.ResponseWriter, r *http.Request) {
		var in api.RolloutRequest
		if !fakeDecode(w, r, &in) {
			return
		}
		ro := api.Rollout{ID: int64(len(g.rollouts) + 1), SkillID: in.SkillID, Version: in.Version, Action: in.Action,
			Targets: in.Targets, Strategy: in.Strategy, State: "queued", CreatedAt: fakeTime, UpdatedAt: fakeTime}
		g.rollouts = append(g.rollouts, ro)
		fakeReply(w, 201, map[string]any{"rollout": ro})
	})
	mux.HandleFunc("GET /v1/rollouts", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, map[string]any{"rollouts": g.rollouts})
	})
	mux.HandleFunc("GET /v1/rollouts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if len(g.script) > 0 {
			d := g.script[min(g.scriptNext, len(g.script)-1)]
			g.scriptNext++
			fakeReply(w, 200, d)
			return
		}
		for _, ro := range g.rollouts {
			if fmt.Sprint(ro.ID) == r.PathValue("id") {
				fakeReply(w, 200, api.RolloutDetail{Rollout: ro, Executions: []api.Execution{
					{RolloutID: ro.ID, DeviceID: "kitchen", State: "succeeded", Attempts: 1, StartedAt: fakeTime, FinishedAt: fakeTime},
					{RolloutID: ro.ID, DeviceID: "hall", State: "in_progress", Attempts: 1, StartedAt: fakeTime},
				}})
				return
			}
		}
		fakeAPIError(w, 404, "not_found", fmt.Sprintf("rollout %s not found", r.PathValue("id")))
	})
	for action, state := range map[string]fleet.RolloutState{"pause": "paused", "resume": "in_progress", "abort": "aborted"} {
		mux.HandleFunc("POST /v1/rollouts/{id}/"+action, func(w http.ResponseWriter, r *http.Request) {
			ro := g.rollouts[0]
			if fmt.Sprint(ro.ID) != r.PathValue("id") {
				fakeAPIError(w, 404, "not_found", "rollout "+r.PathValue("id")+" not found")
				return
			}
			ro.State = state
			fakeReply(w, 200, map[string]any{"rollout": ro})
		})
	}
}
