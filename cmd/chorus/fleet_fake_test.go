//go:build !chorus_agent

package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/api/apitest"
)

// fakeGateway answers what a real gateway cannot be made to answer on cue:
// a rollout's progress scripted poll by poll (TestFleetWait), and devices
// seen at a fixed time (TestFleetDeviceListText). Its bodies are the shared
// wire fixtures of fleet/api/apitest; everything else the CLI does is tested
// against a real gateway (fleet_gateway_test.go).
type fakeGateway struct {
	*apiFront

	mu sync.Mutex
	// script is what successive polls of GET /v1/rollouts/{id} answer; the
	// last one repeats. A poll is a read of the counts (?executions=false),
	// or a full read that does not follow one; a full read right after a
	// read of the counts answers that step again, with its executions.
	script     []api.RolloutDetail
	scriptNext int
	countsLast bool
}

func newFakeGateway(t *testing.T) *fakeGateway {
	t.Helper()
	g := &fakeGateway{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/devices", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, api.DevicesResponse{Devices: []api.Device{apitest.Kitchen(), apitest.Hall()}})
	})
	mux.HandleFunc("GET /v1/skills/resolve", func(w http.ResponseWriter, _ *http.Request) {
		fakeReply(w, 200, api.SkillResponse{Skill: apitest.Weather()})
	})
	mux.HandleFunc("POST /v1/rollouts", func(w http.ResponseWriter, r *http.Request) {
		var in api.RolloutRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			fakeReply(w, 400, api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeInvalid, Message: err.Error()}})
			return
		}
		fakeReply(w, 201, api.RolloutResponse{Rollout: api.Rollout{ID: 2, SkillID: in.SkillID, Version: in.Version,
			Action: in.Action, Targets: in.Targets, Strategy: in.Strategy, State: fleet.RolloutQueued}})
	})
	mux.HandleFunc("GET /v1/rollouts/{id}", func(w http.ResponseWriter, r *http.Request) {
		counts := r.URL.Query().Get("executions") == "false"
		g.mu.Lock()
		if counts || !g.countsLast {
			g.scriptNext++
		}
		d := g.script[min(g.scriptNext-1, len(g.script)-1)]
		g.countsLast = counts
		g.mu.Unlock()
		if counts {
			fakeReply(w, 200, api.RolloutResponse{Rollout: d.Rollout})
			return
		}
		fakeReply(w, 200, d)
	})
	const token = "tok-123"
	g.apiFront = newFront(t, token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			fakeReply(w, 401, api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeUnauthorized, Message: "missing or wrong operator token"}})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return g
}

func fakeReply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
