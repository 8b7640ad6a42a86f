package api

import (
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// Join-endpoint limits (docs/security.md, "Join tokens"): POST /v1/join
// and its polls take small bodies and are rate limited per client address.
const (
	MaxJoinBody = 4 << 10
	// JoinRate is the join endpoint's sustained requests per second per
	// client address, with JoinBurst at once.
	JoinRate  = 1.0
	JoinBurst = 10
)

// CreateJoinTokenRequest is POST /v1/join-tokens. Uses 0 means 1; TTL 0
// means fleet.DefaultJoinTokenTTL.
type CreateJoinTokenRequest struct {
	Tags       []string `json:"tags"`
	Uses       int      `json:"uses"`
	TTLSeconds int64    `json:"ttl_seconds"`
	Approve    bool     `json:"approve"`
}

// JoinTokenCreated is the answer to POST /v1/join-tokens (201): the token
// and its text, the only time the secret is shown.
type JoinTokenCreated struct {
	Token fleet.JoinToken `json:"token"`
	Text  string          `json:"text"`
}

// JoinTokensResponse is GET /v1/join-tokens.
type JoinTokensResponse struct {
	Tokens []fleet.JoinToken `json:"tokens"`
}

// JoinTokenResponse is DELETE /v1/join-tokens/{id}: the revoked token.
type JoinTokenResponse struct {
	Token fleet.JoinToken `json:"token"`
}

// JoinRequest is POST /v1/join, made by `chorus agent join` with no other
// credential than the token's id and secret.
type JoinRequest struct {
	Token  string `json:"token"`  // the token's id
	Secret string `json:"secret"` // the token's secret
	Device string `json:"device"` // the device id asked for
}

// Join statuses.
const (
	JoinAccepted = "accepted" // Credentials hold the device's credentials
	JoinPending  = "pending"  // Pending names the entry to poll
)

// JoinResponse answers POST /v1/join and POST /v1/join/{id}: accepted (201
// on join, 200 on a poll) with the credentials, shown only here, or pending
// (202) with what to poll.
type JoinResponse struct {
	Status      string                    `json:"status"`
	Pending     *PendingTicket            `json:"pending,omitempty"`
	Credentials *configs.AgentCredentials `json:"credentials,omitempty"`
}

// PendingTicket is what a pending agent polls with: the entry's id, and the
// secret it sends as its bearer token (the gateway stores only its hash).
type PendingTicket struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// PendingDevicesResponse is GET /v1/pending-devices.
type PendingDevicesResponse struct {
	Pending []fleet.PendingDevice `json:"pending"`
}
