package fleetbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// Sim is a simulated fleet, in this process (Local) or a child (Remote).
type Sim interface {
	Expect(ctx context.Context, skill string, present bool) error
	Settled(ctx context.Context) (int, error)
	Wait(ctx context.Context, d time.Duration) (Convergence, error)
	Converged() int
	Close(ctx context.Context) (Errors, int64, int64, error)
}

// Scenario is the operator's side of a run: settle, publish a skill, roll it
// out to Target with no in-flight cap, and roll it back (uninstall).
type Scenario struct {
	Client  *fleetclient.Client
	Sim     Sim
	Devices int
	Target  fleet.Target
	SkillID string
	// ArtifactBytes pads the skill's archive.
	ArtifactBytes int
	WorkDir       string
	// Progress prints a line (stderr); Phase marks phase boundaries so the
	// caller can sample its own counters.
	Progress func(format string, args ...any)
	Phase    func(name string)
}

// PhaseResult is one rollout.
type PhaseResult struct {
	Action       fleet.RolloutAction `json:"action"`
	RolloutID    int64               `json:"rollout_id"`
	State        string              `json:"state"`
	Device       Convergence         `json:"device_convergence"` // per device: rollout created → its report met the goal
	TotalMs      float64             `json:"total_ms"`           // rollout created → the rollout terminal (polled every 50 ms)
	Counts       any                 `json:"counts"`
	Error        string              `json:"error,omitempty"`
	ArtifactSize int64               `json:"artifact_size,omitempty"`
}

// Settle waits until every simulated device applied its first desired
// document and the controller lists none of the Target's devices offline.
// It asks for the offline ones only (GET /v1/devices?online=false): once
// the fleet is up that answer is empty, where the whole list would be
// every device, encoded by the gateway and decoded here.
func (s *Scenario) Settle(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	var last time.Time
	offline := fleet.DeviceFilter{Online: new(false)}
	if s.Target.Kind == fleet.TargetTag {
		offline.Tag = s.Target.Value
	}
	for {
		n, err := s.Sim.Settled(ctx)
		if err != nil {
			return 0, err
		}
		online := 0
		if n == s.Devices {
			ds, err := s.Client.Devices(ctx, offline)
			if err != nil {
				return 0, err
			}
			// Counted, not trusted: a gateway older than the online filter
			// lists every device.
			down := 0
			for _, d := range ds {
				if !d.Online {
					down++
				}
			}
			if down == 0 {
				return time.Since(start), nil
			}
			online = max(s.Devices-down, 0)
		}
		if time.Since(last) >= time.Second {
			s.Progress("settling: %d/%d devices applied their desired document, %d online at the controller", n, s.Devices, online)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("settle: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Publish packs and publishes the benchmark skill.
func (s *Scenario) Publish(ctx context.Context) (fleet.SkillVersion, error) {
	arch, err := SkillArchive(s.WorkDir, s.SkillID, "1.0.0", s.ArtifactBytes)
	if err != nil {
		return fleet.SkillVersion{}, err
	}
	return s.Client.Publish(ctx, bytes.NewReader(arch))
}

// Rollout runs one rollout of action and waits for both the devices and the
// controller, bounded by ctx.
func (s *Scenario) Rollout(ctx context.Context, action fleet.RolloutAction) PhaseResult {
	res := PhaseResult{Action: action}
	if s.Phase != nil {
		s.Phase(string(action) + ":start")
	}
	if err := s.Sim.Expect(ctx, s.SkillID, action == fleet.RolloutInstall); err != nil {
		res.Error = err.Error()
		return res
	}
	start := time.Now()
	r, err := s.Client.CreateRollout(ctx, api.RolloutRequest{SkillID: s.SkillID, Action: action,
		Targets: []fleet.Target{s.Target}, Strategy: api.Strategy{}})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.RolloutID = r.ID
	stop := s.showProgress(action, start)
	deadline, _ := ctx.Deadline()
	conv, werr := s.Sim.Wait(ctx, time.Until(deadline))
	res.Device = conv
	total, state, counts, perr := s.waitRollout(ctx, r.ID, start)
	stop()
	res.TotalMs, res.State, res.Counts = float64(total.Microseconds())/1000, state, counts
	switch {
	case werr != nil:
		res.Error = werr.Error()
	case perr != nil:
		res.Error = perr.Error()
	}
	if s.Phase != nil {
		s.Phase(string(action) + ":end")
	}
	return res
}

// waitRollout follows the rollout's counts (not its executions, which grow
// with the fleet) every 50 ms until it is terminal.
func (s *Scenario) waitRollout(ctx context.Context, id int64, start time.Time) (time.Duration, string, any, error) {
	d, err := s.Client.WaitRollout(ctx, id, fleetclient.WaitOptions{Interval: 50 * time.Millisecond, CountsOnly: true})
	if err != nil {
		return time.Since(start), "unfinished", nil, err
	}
	return time.Since(start), string(d.Rollout.State), d.Rollout.Counts, nil
}

func (s *Scenario) showProgress(action fleet.RolloutAction, start time.Time) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				s.Progress("%s: %d/%d devices converged after %s", action, s.Sim.Converged(), s.Devices, time.Since(start).Round(time.Millisecond))
			}
		}
	}()
	return func() { close(quit); <-done }
}

// TempDir makes the run's work directory.
func TempDir() (string, error) { return os.MkdirTemp("", "chorus-bench-") }
