package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// Fleet is what the API needs of the fleet controller
// (*controller.Controller implements it). Mutating calls take the actor
// written to the audit log.
type Fleet interface {
	ListDevices(ctx context.Context, f fleet.DeviceFilter) ([]*fleet.Device, error)
	GetDevice(ctx context.Context, id string) (*fleet.Device, error)
	DesiredOf(ctx context.Context, id string) (fleet.Desired, error)
	AddDevice(ctx context.Context, actor, id string, tags []string) (*fleet.Device, configs.AgentCredentials, error)
	RemoveDevice(ctx context.Context, actor, id string) error
	SetTags(ctx context.Context, actor, id string, tags []string) (*fleet.Device, error)
	RotateDevice(ctx context.Context, actor, id string) (*fleet.Device, configs.AgentCredentials, error)

	ListIntegrations(ctx context.Context) ([]*fleet.Integration, error)
	AddIntegration(ctx context.Context, actor, name string, allow []string) (*fleet.Integration, configs.Credential, error)
	RemoveIntegration(ctx context.Context, actor, name string) error
	ListOperators(ctx context.Context) ([]*fleet.Operator, error)
	AddOperator(ctx context.Context, actor, name string) (*fleet.Operator, configs.Credential, error)
	RemoveOperator(ctx context.Context, actor, name string) error

	PublishSkill(ctx context.Context, actor string, archive io.Reader) (*fleet.SkillVersion, error)
	ListSkills(ctx context.Context) ([]*fleet.SkillVersion, error)
	GetSkill(ctx context.Context, id string) (*fleet.SkillVersion, []*fleet.SkillVersion, error)
	Search(ctx context.Context, query string, limit int) ([]*fleet.SkillVersion, []float64, error)
	Resolve(ctx context.Context, query string) (*fleet.SkillVersion, error)
	SetSkillConfig(ctx context.Context, actor, skill string, t fleet.Target, settings json.RawMessage) (*fleet.Assignment, error)
	RequestSkills(ctx context.Context, device string, action fleet.AssignmentAction, packages []string) (fleet.Desired, error)
	OpenArtifact(ctx context.Context, device, sha256 string) (*os.File, error)

	CreateRollout(ctx context.Context, actor string, r *fleet.Rollout) (*fleet.Rollout, error)
	ListRollouts(ctx context.Context, f fleet.RolloutFilter) ([]*fleet.Rollout, error)
	GetRollout(ctx context.Context, id int64) (*fleet.Rollout, []*fleet.Execution, error)
	Rollout(ctx context.Context, id int64) (*fleet.Rollout, error)
	PauseRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error)
	ResumeRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error)
	AbortRollout(ctx context.Context, actor string, id int64, rollback bool) (*fleet.Rollout, error)

	ListAudit(ctx context.Context, f fleet.AuditFilter, limit int) ([]*fleet.AuditEntry, error)

	ListSkillGrants(ctx context.Context) ([]*fleet.SkillGrant, error)
	PutSkillGrant(ctx context.Context, actor string, g *fleet.SkillGrant) (*fleet.SkillGrant, error)
	RemoveSkillGrant(ctx context.Context, actor, skill, device string) error

	CreateJoinToken(ctx context.Context, actor string, tags []string, uses int, ttl time.Duration, approve bool) (fleet.IssuedJoinToken, error)
	ListJoinTokens(ctx context.Context) ([]*fleet.JoinToken, error)
	RevokeJoinToken(ctx context.Context, actor, id string) (*fleet.JoinToken, error)
	Join(ctx context.Context, address, tokenID, secret, device string) (fleet.JoinResult, error)
	PollJoin(ctx context.Context, id, secret string) (fleet.JoinResult, error)
	ListPending(ctx context.Context) ([]*fleet.PendingDevice, error)
	AcceptPending(ctx context.Context, actor, id string) (*fleet.Device, error)
	RejectPending(ctx context.Context, actor, id string) error
}
