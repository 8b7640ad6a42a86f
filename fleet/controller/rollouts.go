package controller

import (
	"context"
	"fmt"

	"github.com/chorus-edge/chorus/fleet"
)

// CreateRollout creates a rollout of r.SkillID (install at r.Version, ""
// for the latest, or uninstall) over r.Targets with r.Strategy. The engine
// starts it at once.
func (c *Controller) CreateRollout(ctx context.Context, actor string, r *fleet.Rollout) (*fleet.Rollout, error) {
	in := *r
	in.CreatedBy = actor
	execs, err := c.store.CreateRollout(ctx, &in)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "rollout.create", rolloutSubject(in.ID), map[string]any{
		"skill_id": in.SkillID, "version": in.Version, "action": in.Action, "devices": len(execs)})
	c.Kick()
	return c.store.GetRollout(ctx, in.ID)
}

// GetRollout returns a rollout and its executions; each queued execution
// says why it has not started (Reason, and Blocked when it cannot until
// something outside the rollout changes: docs/rollouts.md).
func (c *Controller) GetRollout(ctx context.Context, id int64) (*fleet.Rollout, []*fleet.Execution, error) {
	r, err := c.store.GetRollout(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: id})
	if err != nil {
		return r, execs, err
	}
	return r, execs, c.explain(ctx, r, execs)
}

// Rollout returns a rollout with its counts, without its executions: what a
// client following a large rollout polls (GET /v1/rollouts/{id}?executions=false).
func (c *Controller) Rollout(ctx context.Context, id int64) (*fleet.Rollout, error) {
	return c.store.GetRollout(ctx, id)
}

// ListRollouts returns the rollouts f selects, newest first.
func (c *Controller) ListRollouts(ctx context.Context, f fleet.RolloutFilter) ([]*fleet.Rollout, error) {
	return c.store.ListRollouts(ctx, f)
}

// PauseRollout stops a rollout from starting executions; running ones finish.
func (c *Controller) PauseRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error) {
	return c.setRolloutState(ctx, actor, id, fleet.RolloutPaused, "paused by "+actor)
}

// ResumeRollout lets a paused rollout go on.
func (c *Controller) ResumeRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error) {
	return c.setRolloutState(ctx, actor, id, fleet.RolloutInProgress, "")
}

// AbortRollout stops a rollout and cancels its unfinished executions. With
// rollback, an install rollout also puts an uninstall assignment on every
// device whose execution had started (succeeded, or canceled by this abort
// while in progress), so the skill leaves those devices again.
func (c *Controller) AbortRollout(ctx context.Context, actor string, id int64, rollback bool) (*fleet.Rollout, error) {
	before, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: id})
	if err != nil {
		return nil, err
	}
	r, err := c.setRolloutState(ctx, actor, id, fleet.RolloutAborted, "aborted by "+actor)
	if err != nil || !rollback || r.Action != fleet.RolloutInstall {
		return r, err
	}
	for _, e := range before {
		if e.State != fleet.ExecSucceeded && e.State != fleet.ExecInProgress {
			continue
		}
		a := &fleet.Assignment{SkillID: r.SkillID, Target: fleet.DeviceTarget(e.DeviceID), Action: fleet.AssignUninstall}
		if err := c.store.PutAssignment(ctx, a); err != nil {
			if fleet.ErrorCode(err) == fleet.ENOTFOUND {
				continue // the device was removed meanwhile
			}
			return r, fmt.Errorf("rollback %s on %s: %w", r.SkillID, e.DeviceID, err)
		}
		c.audit(ctx, actor, "rollout.rollback", rolloutSubject(id)+"/"+e.DeviceID, map[string]any{"skill_id": r.SkillID})
		c.queue.Add(e.DeviceID)
	}
	return r, nil
}

func (c *Controller) setRolloutState(ctx context.Context, actor string, id int64, to fleet.RolloutState, reason string) (*fleet.Rollout, error) {
	return c.moveRollout(ctx, actor, id, "", to, reason)
}

// moveRollout is setRolloutState from one state only (any when from is "").
func (c *Controller) moveRollout(ctx context.Context, actor string, id int64, from, to fleet.RolloutState, reason string) (*fleet.Rollout, error) {
	r, err := c.store.UpdateRolloutState(ctx, id, from, to, reason)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "rollout."+string(to), rolloutSubject(id), map[string]any{"reason": reason})
	c.Kick()
	return r, nil
}

// ListAudit returns audit entries, newest first.
func (c *Controller) ListAudit(ctx context.Context, f fleet.AuditFilter, limit int) ([]*fleet.AuditEntry, error) {
	return c.store.ListAudit(ctx, f, limit)
}

func rolloutSubject(id int64) string { return fmt.Sprintf("rollout/%d", id) }
