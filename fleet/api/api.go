// Package api is the gateway HTTP API's contract (docs/api.md): every request
// and response body, each defined once. The server (fleet/httpapi) encodes
// these types and the client (fleet/fleetclient) decodes them, so the two
// cannot drift; fleet/api/apitest holds the shared wire fixtures.
//
// Where the domain type already has the wire's shape it crosses the wire as
// it is (fleet.Target, fleet.Route, fleet.SkillGrant, fleet.AuditEntry,
// fleet.Assignment, fleet.Integration, fleet.Operator, fleet.SkillVersion
// without its manifest), as in benbjohnson/wtf; the types here are the
// envelopes and the views whose shape differs (Device, Rollout, Execution,
// Strategy). Rollout and execution states are fleet.RolloutState and
// fleet.ExecState, with their constants and Terminal.
//
// Readers ignore unknown fields, so a newer gateway that adds fields stays
// compatible with an older client.
package api

import (
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// The error codes of docs/api.md, "Errors". The fleet's own codes (invalid,
// not_found, conflict, unavailable, internal) are fleet's; unauthorized and
// too_large are the HTTP layer's.
const (
	CodeInvalid      = fleet.EINVALID
	CodeUnauthorized = fleet.EUNAUTHORIZED
	CodeNotFound     = fleet.ENOTFOUND
	CodeConflict     = fleet.ECONFLICT
	CodeTooLarge     = "too_large"
	CodeUnavailable  = fleet.EUNAVAILABLE
	CodeInternal     = fleet.EINTERNAL
	// CodeRateLimited is 429 from the join endpoints (Retry-After says when
	// to try again).
	CodeRateLimited = "rate_limited"
)

// ErrorBody is every error answer: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error's code (one of the Code constants) and a message
// fit for an operator.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Credentials is set only on a 503 of POST /v1/devices whose outcome the
	// database could not confirm: the device may have been stored, and its
	// one-time secret must not be lost, so the client keeps these; they
	// work exactly when GET /v1/devices/{id} then finds the device.
	Credentials *configs.AgentCredentials `json:"credentials,omitempty"`
}

// Body caps (docs/api.md): JSON requests and skill archives.
const (
	MaxJSONBody    = 1 << 20
	MaxArchiveBody = 256 << 20
)

// Health is GET /healthz: 200 with status "ok", or 503 with status
// "degraded" and what is failing.
type Health struct {
	Status  string      `json:"status"` // "ok" or "degraded"
	Version string      `json:"version"`
	MQTT    *MQTTHealth `json:"mqtt,omitempty"`
	Failing []string    `json:"failing,omitempty"` // one line per failing part
}

// MQTTHealth describes the gateway's broker: the embedded one's counters and
// listeners, or an external broker's URL.
type MQTTHealth struct {
	Broker    string           `json:"broker,omitempty"` // "external", or empty for the embedded broker
	URL       string           `json:"url,omitempty"`    // the external broker
	Clients   *int64           `json:"clients,omitempty"`
	Retained  *int64           `json:"retained,omitempty"`
	Listeners []ListenerHealth `json:"listeners,omitempty"`
}

// ListenerHealth is one MQTT listener of the embedded broker.
type ListenerHealth struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Serving bool   `json:"serving"`
	Error   string `json:"error,omitempty"` // the accept error it is retrying
}

// nonNil returns s, or an empty slice for nil, so a list encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Values copies a list of pointers into a list of values, never nil: how a
// store's answer becomes an envelope's list.
func Values[T any](ps []*T) []T {
	out := make([]T, 0, len(ps))
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}
