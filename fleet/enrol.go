package fleet

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/configs"
)

// Join-token limits (docs/security.md, "Join tokens").
const (
	MaxJoinTokenUses = 10000
	MaxJoinTokenTTL  = 365 * 24 * time.Hour
	// DefaultJoinTokenTTL is a token's life when the operator names none.
	DefaultJoinTokenTTL = 24 * time.Hour
)

// JoinToken authorises satellites to enrol themselves (`chorus agent join`):
// Uses times, until ExpiresAt, unless revoked. Only SecretHash is stored;
// the secret is shown once, inside the token text.
type JoinToken struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"-"`
	Tags       []string  `json:"tags"`    // given to every device it enrols
	Uses       int       `json:"uses"`    // how many devices it may enrol
	Used       int       `json:"used"`    // how many it has enrolled
	Approve    bool      `json:"approve"` // devices get access at once, without an operator's accept
	ExpiresAt  time.Time `json:"expires_at"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	CreatedAt  time.Time `json:"created_at"`
}

// Validate checks what a new token must have.
func (t *JoinToken) Validate() error {
	if err := ValidName("join token", t.ID); err != nil {
		return err
	}
	if err := nonEmpty("join token secret hash", t.SecretHash); err != nil {
		return err
	}
	if err := ValidTags(t.Tags); err != nil {
		return err
	}
	if t.Uses < 1 || t.Uses > MaxJoinTokenUses {
		return Errorf(EINVALID, "join token uses %d: want 1 to %d", t.Uses, MaxJoinTokenUses)
	}
	if t.ExpiresAt.IsZero() {
		return Errorf(EINVALID, "join token: an expiry is required")
	}
	return nil
}

// A join token's states, as `chorus fleet token list` shows them.
const (
	TokenUsable  = "usable"
	TokenRevoked = "revoked"
	TokenExpired = "expired"
	TokenUsedUp  = "used up"
)

// State is the token's state at now: revoked, expired or used up, checked
// in that order, else usable. It is the one rule Usable and the CLI's list
// both apply.
func (t *JoinToken) State(now time.Time) string {
	switch {
	case !t.RevokedAt.IsZero():
		return TokenRevoked
	case !now.Before(t.ExpiresAt):
		return TokenExpired
	case t.Used >= t.Uses:
		return TokenUsedUp
	}
	return TokenUsable
}

// Usable says why the token cannot enrol a device at now (an EINVALID
// error naming the fix), or nil.
func (t *JoinToken) Usable(now time.Time) error {
	switch t.State(now) {
	case TokenRevoked:
		return Errorf(EINVALID, "join token %s was revoked: ask the operator for a new one (chorus fleet token create)", t.ID)
	case TokenExpired:
		return Errorf(EINVALID, "join token %s expired at %s: ask the operator for a new one (chorus fleet token create --ttl ...)", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	case TokenUsedUp:
		return Errorf(EINVALID, "join token %s is used up (%d of %d uses): ask the operator for a new one (chorus fleet token create --uses N)", t.ID, t.Used, t.Uses)
	}
	return nil
}

// PendingDevice is a satellite that joined with a token without --approve:
// it waits for an operator's accept or reject and, until accepted, is in no
// broker table (no MQTT access). Accepted is set by accept; the device then
// exists, and the joining agent collects its credentials with its poll
// secret on its next poll, which ends the pending entry.
type PendingDevice struct {
	ID         string    `json:"id"`
	DeviceID   string    `json:"device"`
	Tags       []string  `json:"tags"`
	TokenID    string    `json:"token"`
	Address    string    `json:"address"` // where the join came from
	SecretHash string    `json:"-"`       // of the agent's poll secret
	Accepted   bool      `json:"accepted"`
	CreatedAt  time.Time `json:"created_at"`
	// CollectedAt is when the agent last collected its credentials (zero:
	// not yet). A collected entry no longer waits for an operator.
	CollectedAt time.Time `json:"collected_at,omitzero"`
}

// Validate checks what a new pending entry must have.
func (p *PendingDevice) Validate() error {
	if err := ValidName("pending enrolment", p.ID); err != nil {
		return err
	}
	if err := ValidDeviceID(p.DeviceID); err != nil {
		return err
	}
	if err := ValidTags(p.Tags); err != nil {
		return err
	}
	return nonEmpty("pending poll secret hash", p.SecretHash)
}

// EnrolService keeps join tokens and the devices waiting to be accepted.
type EnrolService interface {
	CreateJoinToken(ctx context.Context, t *JoinToken) error
	GetJoinToken(ctx context.Context, id string) (*JoinToken, error)
	ListJoinTokens(ctx context.Context) ([]*JoinToken, error)
	// RevokeJoinToken marks the token revoked (kept for the audit trail).
	RevokeJoinToken(ctx context.Context, id string) (*JoinToken, error)
	// UseJoinToken counts one use of the token if it is Usable at the
	// store's clock, atomically; otherwise it returns Usable's error and
	// changes nothing.
	UseJoinToken(ctx context.Context, id string) (*JoinToken, error)
	// RefundJoinToken gives back one use (the enrolment it paid for failed).
	RefundJoinToken(ctx context.Context, id string) error

	// CreatePending adds a pending entry; a device id already waiting is ErrConflict.
	CreatePending(ctx context.Context, p *PendingDevice) error
	GetPending(ctx context.Context, id string) (*PendingDevice, error)
	ListPending(ctx context.Context) ([]*PendingDevice, error)
	AcceptPending(ctx context.Context, id string) (*PendingDevice, error)
	// CollectPending records that the agent collected its credentials.
	CollectPending(ctx context.Context, id string) (*PendingDevice, error)
	DeletePending(ctx context.Context, id string) error
}

// IssuedJoinToken is a new token with what its text carries: the secret
// (shown only now), the gateway URL it is for and the TLS pin, if any.
type IssuedJoinToken struct {
	Token  *JoinToken
	Secret string
	URL    string // the controller's ServerURL: the URL the gateway hands out
	CAPin  string // the controller's JoinCAPin
}

// JoinResult is what a join or a poll gets: credentials (accepted) or the
// pending entry with the poll secret (shown only on the join).
type JoinResult struct {
	Credentials *configs.AgentCredentials
	Pending     *PendingDevice
	PollSecret  string
}
