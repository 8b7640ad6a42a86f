// Package apitest holds the shared wire fixtures of the gateway HTTP API
// (fleet/api): sample bodies as Go values with the JSON the server writes for
// them, so the api package, the client's tests and the CLI's fake gateway
// all test against the same bodies (as gateway/envelope/envelopetest does
// for the bus envelope).
package apitest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// Time is the fixtures' clock reading.
var Time = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

// Kitchen is an online device that has not caught up: 2 of 3 skills loaded,
// applied version 4 of 5.
func Kitchen() api.Device {
	return api.Device{ID: "kitchen", Tags: []string{"home"}, Online: true, LastSeen: Time, BirthSession: 3,
		AgentVersion: "0.1.0", Connectivity: json.RawMessage(`{"network":true,"internet":false,"gui":true}`),
		SkillsLoaded: 2, SkillsDesired: 3, AppliedVersion: 4, DesiredVersion: 5, Drift: true, CreatedAt: Time}
}

// Hall is a device that never connected.
func Hall() api.Device {
	return api.Device{ID: "hall", Tags: []string{"home", "quiet"}, Connectivity: json.RawMessage(`{}`), CreatedAt: Time}
}

// Hello and Weather are published skill versions.
func Hello() fleet.SkillVersion {
	return fleet.SkillVersion{SkillID: "hello.chorus", Version: "1.0.0", SHA256: strings.Repeat("a", 64), Size: 417,
		Title: "hello.chorus", Description: "Answers hello", Requirements: []string{}, PublishedAt: Time}
}

func Weather() fleet.SkillVersion {
	return fleet.SkillVersion{SkillID: "weather.chorus", Version: "2.1.0", SHA256: strings.Repeat("b", 64), Size: 900,
		Title: "weather.chorus", Description: "Tells the weather", Requirements: []string{"internet"}, PublishedAt: Time}
}

// Rollout7 is an install of hello.chorus on tag home, under way: one
// canary succeeded, one device in progress.
func Rollout7() api.RolloutDetail {
	return api.RolloutDetail{
		Rollout: api.Rollout{ID: 7, SkillID: "hello.chorus", Version: "1.0.0", Action: fleet.RolloutInstall,
			Targets: []fleet.Target{fleet.TagTarget("home")}, Strategy: api.Strategy{Canary: 1, Timeout: api.Duration(10 * time.Minute)},
			State: fleet.RolloutInProgress, CreatedBy: "operator", CreatedAt: Time, UpdatedAt: Time, StartedAt: Time,
			Counts: api.Counts{Succeeded: 1, InProgress: 1}},
		Executions: []api.Execution{
			{RolloutID: 7, DeviceID: "kitchen", State: fleet.ExecSucceeded, Canary: true, Attempts: 1, StartedAt: Time, FinishedAt: Time},
			{RolloutID: 7, DeviceID: "hall", State: fleet.ExecInProgress, Attempts: 1, StartedAt: Time},
		},
	}
}

// Integration, Operator and Audit are small list entries.
func Integration() fleet.Integration {
	return fleet.Integration{Name: "ha", Allow: []string{"speak"}, CreatedAt: Time}
}

func Operator() fleet.Operator { return fleet.Operator{Name: "ops", CreatedAt: Time} }

func Audit() fleet.AuditEntry {
	return fleet.AuditEntry{ID: 1, At: Time, Actor: "operator", Action: "device.add", Subject: "device/kitchen",
		Detail: json.RawMessage(`{"tags":["home"]}`)}
}

// Case is one wire fixture: a body and the JSON the server writes for it.
// Decoding JSON into a new value of Value's type gives Value again.
type Case struct {
	Name  string
	Value any
	JSON  string
}

// Cases are the wire fixtures, one or more per kind of body.
func Cases() []Case {
	return []Case{
		{"device online", api.DeviceResponse{Device: Kitchen()}, `{"device":{"id":"kitchen","tags":["home"],"online":true,
			"last_seen":"2026-11-29T19:00:00Z","birth_session":3,"agent_version":"0.1.0",
			"connectivity":{"network":true,"internet":false,"gui":true},"skills_loaded":2,"skills_desired":3,
			"applied_version":4,"desired_version":5,"drift":true,"created_at":"2026-11-29T19:00:00Z"}}`},
		{"device never seen", api.DevicesResponse{Devices: []api.Device{Hall()}}, `{"devices":[{"id":"hall","tags":["home","quiet"],
			"online":false,"birth_session":0,"agent_version":"","connectivity":{},"skills_loaded":0,"skills_desired":0,
			"applied_version":0,"desired_version":0,"drift":false,"created_at":"2026-11-29T19:00:00Z"}]}`},
		{"skill", api.SkillResponse{Skill: Weather()}, `{"skill":{"skill_id":"weather.chorus","version":"2.1.0",
			"sha256":"` + strings.Repeat("b", 64) + `","size":900,"title":"weather.chorus","description":"Tells the weather",
			"requirements":["internet"],"published_at":"2026-11-29T19:00:00Z"}}`},
		{"search", api.SearchResponse{Results: []api.SearchResult{{Skill: Hello(), Score: 1.5}}}, `{"results":[{"skill":{
			"skill_id":"hello.chorus","version":"1.0.0","sha256":"` + strings.Repeat("a", 64) + `","size":417,"title":"hello.chorus",
			"description":"Answers hello","requirements":[],"published_at":"2026-11-29T19:00:00Z"},"score":1.5}]}`},
		{"rollout request", api.RolloutRequest{SkillID: "weather.chorus", Version: "2.1.0", Action: fleet.RolloutInstall,
			Targets: []fleet.Target{fleet.DeviceTarget("pi-9"), fleet.TagTarget("home")},
			Strategy: api.Strategy{Canary: 1, MaxInFlight: 2, FailureThresholdPct: 20, MinExecuted: 3, Timeout: api.Duration(90 * time.Second),
				Deadline: api.Duration(time.Hour), RatePerMin: 40, RampBasePerMin: 5, RampEvery: api.Duration(2 * time.Minute)}},
			`{"skill_id":"weather.chorus","version":"2.1.0","action":"install","targets":[{"kind":"device","value":"pi-9"},
			{"kind":"tag","value":"home"}],"strategy":{"canary":1,"max_in_flight":2,"failure_threshold_pct":20,"min_executed":3,"timeout":"1m30s",
			"deadline":"1h0m0s","rate_per_min":40,"ramp_base_per_min":5,"ramp_every":"2m0s"}}`},
		{"uninstall request, default strategy", api.RolloutRequest{SkillID: "hello.chorus", Action: fleet.RolloutUninstall,
			Targets: []fleet.Target{fleet.AllTarget()}}, `{"skill_id":"hello.chorus","action":"uninstall","targets":[{"kind":"all"}],"strategy":{}}`},
		{"rollout detail", Rollout7(), `{"rollout":{"id":7,"skill_id":"hello.chorus","version":"1.0.0","action":"install",
			"targets":[{"kind":"tag","value":"home"}],"strategy":{"canary":1,"timeout":"10m0s"},"state":"in_progress",
			"created_by":"operator","created_at":"2026-11-29T19:00:00Z","updated_at":"2026-11-29T19:00:00Z",
			"started_at":"2026-11-29T19:00:00Z",
			"counts":{"queued":0,"in_progress":1,"succeeded":1,"failed":0,"timed_out":0,"canceled":0}},
			"executions":[{"rollout_id":7,"device_id":"kitchen","state":"succeeded","reason":"","canary":true,
			"started_at":"2026-11-29T19:00:00Z","finished_at":"2026-11-29T19:00:00Z","attempts":1},
			{"rollout_id":7,"device_id":"hall","state":"in_progress","reason":"","canary":false,
			"started_at":"2026-11-29T19:00:00Z","attempts":1}]}`},
		{"execution blocked by an offline device", api.Execution{RolloutID: 8, DeviceID: "hall", State: fleet.ExecQueued,
			Reason: "offline since 2026-11-29T19:00:00Z", Blocked: true},
			`{"rollout_id":8,"device_id":"hall","state":"queued","reason":"offline since 2026-11-29T19:00:00Z","blocked":true,
			"canary":false,"attempts":0}`},
		{"integrations", api.IntegrationsResponse{Integrations: []fleet.Integration{Integration()}},
			`{"integrations":[{"name":"ha","allow":["speak"],"created_at":"2026-11-29T19:00:00Z"}]}`},
		{"operators", api.OperatorsResponse{Operators: []fleet.Operator{Operator()}},
			`{"operators":[{"name":"ops","created_at":"2026-11-29T19:00:00Z"}]}`},
		{"audit", api.AuditResponse{Entries: []fleet.AuditEntry{Audit()}}, `{"entries":[{"id":1,"at":"2026-11-29T19:00:00Z",
			"actor":"operator","action":"device.add","subject":"device/kitchen","detail":{"tags":["home"]}}]}`},
		{"device skills", api.DeviceSkillsResponse{DesiredVersion: 4, Skills: map[string]fleet.DesiredSkill{
			"hello.chorus": {Version: "1.0.0", SHA256: strings.Repeat("a", 64), Size: 417, URL: "/v1/artifacts/" + strings.Repeat("a", 64)}}},
			`{"desired_version":4,"skills":{"hello.chorus":{"version":"1.0.0","sha256":"` + strings.Repeat("a", 64) +
				`","size":417,"url":"/v1/artifacts/` + strings.Repeat("a", 64) + `"}}}`},
		{"error", api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeNotFound, Message: `device "nope" not found`}},
			`{"error":{"code":"not_found","message":"device \"nope\" not found"}}`},
		{"health, embedded broker", api.Health{Status: "ok", Version: "0.3.0", MQTT: &api.MQTTHealth{Clients: ptr[int64](2), Retained: ptr[int64](0)}},
			`{"status":"ok","version":"0.3.0","mqtt":{"clients":2,"retained":0}}`},
	}
}

func ptr[T any](v T) *T { return &v }
