package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// MaxAuditDetail caps the detail object of one audit entry.
const MaxAuditDetail = 64 << 10

// Actors the controller writes for itself.
const ActorController = "controller"

// AuditEntry records one operator action or execution transition.
type AuditEntry struct {
	ID      int64           `json:"id"` // increases with every append
	At      time.Time       `json:"at"`
	Actor   string          `json:"actor"`   // "operator:<name>", "controller", ...
	Action  string          `json:"action"`  // "device.add", "rollout.create", "execution.succeeded", ...
	Subject string          `json:"subject"` // "device/kitchen", "rollout/7", "rollout/7/kitchen", ...
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Validate checks that actor and action are set and detail is an object.
func (e *AuditEntry) Validate() error {
	if err := nonEmpty("audit actor", e.Actor); err != nil {
		return err
	}
	if err := nonEmpty("audit action", e.Action); err != nil {
		return err
	}
	return ValidJSONObject("audit detail", e.Detail, MaxAuditDetail)
}

// AuditFilter narrows ListAudit. Empty fields match everything.
type AuditFilter struct {
	Actor    string
	Action   string
	Subject  string // exact, or a prefix when it ends in "/" ("rollout/7/")
	Since    time.Time
	BeforeID int64 // page backwards: only entries with a smaller ID
}

// AuditService is the append-only audit log. ListAudit returns the newest
// entries first, at most limit (0 = 100).
type AuditService interface {
	AppendAudit(ctx context.Context, e *AuditEntry) error
	ListAudit(ctx context.Context, f AuditFilter, limit int) ([]*AuditEntry, error)
}
