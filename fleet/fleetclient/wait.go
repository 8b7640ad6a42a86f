package fleetclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet/api"
)

// DefaultWaitInterval is WaitRollout's poll interval when none is given.
const DefaultWaitInterval = time.Second

// WaitOptions tune WaitRollout. The zero value polls every second until
// the rollout is terminal and gives up at the first unreachable answer.
type WaitOptions struct {
	Interval time.Duration                // between polls (DefaultWaitInterval)
	Until    func(api.RolloutDetail) bool // what to wait for (the rollout is terminal)
	// Progress, when set, sees every answer, in order.
	Progress func(api.RolloutDetail)
	// Unreachable is how long a gateway that does not answer (a restart
	// mid-rollout) is polled on before WaitRollout gives up; 0 gives up at
	// once. OnUnreachable, when set, is told when it stops answering.
	Unreachable   time.Duration
	OnUnreachable func()
	// CountsOnly polls the rollout without its executions (GET
	// /v1/rollouts/{id}?executions=false), whose number grows with the
	// fleet: for fleets of thousands followed at a short interval. The
	// answers' Executions are then nil.
	CountsOnly bool
	// ExecutionsWhenStill polls as CountsOnly does, and reads the
	// executions too (GET /v1/rollouts/{id}) when the rollout is terminal or
	// its state and counts are those of the previous answer: the answers
	// Until and Progress see carry the executions exactly then. A rollout
	// that is settled (api.RolloutDetail.Settled) stands still, so waiting
	// for that ends at most one interval later than without this, and a
	// terminal answer always has its executions.
	ExecutionsWhenStill bool
}

func (o *WaitOptions) setDefaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultWaitInterval
	}
	if o.Until == nil {
		o.Until = func(d api.RolloutDetail) bool { return d.Rollout.Terminal() }
	}
}

// WaitRollout polls rollout id until o.Until holds and returns that answer.
// It is the one client-side rollout follower: the CLI's --wait and `rollout
// watch`, the fleet benchmark and the end-to-end tests use it. It returns
// ctx's error when ctx ends first, an API error as it comes, and an
// *UnreachableError once the gateway has not answered for o.Unreachable;
// the detail returned with an error is the last one read.
func (c *Client) WaitRollout(ctx context.Context, id int64, o WaitOptions) (api.RolloutDetail, error) {
	o.setDefaults()
	var last api.RolloutDetail
	var downSince time.Time
	p := &poller{c: c, id: id, o: o}
	for {
		d, err := p.poll(ctx)
		var unreachable *UnreachableError
		switch {
		case errors.As(err, &unreachable) && ctx.Err() == nil:
			if downSince.IsZero() {
				downSince = time.Now()
				if o.OnUnreachable != nil {
					o.OnUnreachable()
				}
			}
			if time.Since(downSince) >= o.Unreachable {
				return last, err
			}
		case err != nil:
			return last, err
		default:
			downSince, last = time.Time{}, d
			if o.Progress != nil {
				o.Progress(d)
			}
			if o.Until(d) {
				return d, nil
			}
		}
		t := time.NewTimer(o.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, fmt.Errorf("wait for rollout %d: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// poller reads the rollout as the options ask, remembering the last
// summary to tell when the rollout stands still.
type poller struct {
	c    *Client
	id   int64
	o    WaitOptions
	last *api.Rollout
}

func (p *poller) poll(ctx context.Context) (api.RolloutDetail, error) {
	if !p.o.CountsOnly && !p.o.ExecutionsWhenStill {
		return p.c.Rollout(ctx, p.id)
	}
	r, err := p.c.RolloutSummary(ctx, p.id)
	if err != nil {
		return api.RolloutDetail{}, err
	}
	still := p.last != nil && p.last.State == r.State && p.last.Counts == r.Counts
	p.last = &r
	if p.o.ExecutionsWhenStill && (still || r.Terminal()) {
		return p.c.Rollout(ctx, p.id)
	}
	return api.RolloutDetail{Rollout: r}, nil
}
