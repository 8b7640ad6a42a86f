package fleet

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// RolloutAction is what a rollout does to the skill on its devices.
type RolloutAction string

const (
	RolloutInstall   RolloutAction = "install"
	RolloutUninstall RolloutAction = "uninstall"
)

// RolloutState is the life cycle of a rollout (AWS IoT Jobs, hawkBit).
type RolloutState string

const (
	RolloutQueued     RolloutState = "queued"      // created; no execution started
	RolloutInProgress RolloutState = "in_progress" // executions are being started
	RolloutPaused     RolloutState = "paused"      // no new executions start; running ones finish
	RolloutSucceeded  RolloutState = "succeeded"   // every execution ended; below the failure threshold
	RolloutFailed     RolloutState = "failed"      // ended with failures at or above the threshold
	RolloutAborted    RolloutState = "aborted"     // stopped by the threshold or an operator
	RolloutCanceled   RolloutState = "canceled"    // withdrawn by an operator
)

var rolloutNext = map[RolloutState][]RolloutState{
	RolloutQueued:     {RolloutInProgress, RolloutPaused, RolloutAborted, RolloutCanceled},
	RolloutInProgress: {RolloutPaused, RolloutSucceeded, RolloutFailed, RolloutAborted, RolloutCanceled},
	RolloutPaused:     {RolloutInProgress, RolloutAborted, RolloutCanceled},
}

// Terminal reports whether no transition leaves the state.
func (s RolloutState) Terminal() bool { return s.Valid() && len(rolloutNext[s]) == 0 }

// CanTransition reports whether a rollout may go from s to to.
func (s RolloutState) CanTransition(to RolloutState) bool { return contains(rolloutNext[s], to) }

// Valid reports whether s is a known state.
func (s RolloutState) Valid() bool {
	switch s {
	case RolloutQueued, RolloutInProgress, RolloutPaused, RolloutSucceeded,
		RolloutFailed, RolloutAborted, RolloutCanceled:
		return true
	}
	return false
}

// ExecState is the life cycle of one device's execution of a rollout
// (AWS IoT Jobs: QUEUED → IN_PROGRESS → SUCCEEDED | FAILED | TIMED_OUT, plus
// CANCELED).
type ExecState string

const (
	ExecQueued     ExecState = "queued"      // waiting for a slot or for the device to come online
	ExecInProgress ExecState = "in_progress" // the device's desired document asks for the change
	ExecSucceeded  ExecState = "succeeded"
	ExecFailed     ExecState = "failed"
	ExecTimedOut   ExecState = "timed_out"
	ExecCanceled   ExecState = "canceled" // by an operator, an abort, or a newer rollout
)

// execNext is the execution state machine. in_progress → queued gives a slot
// back (the device went away mid-change; it finishes when it returns);
// queued → failed ends an execution that cannot start (say, its device was
// removed). Every other terminal state is final: a retry is a new rollout.
// queued → timed_out ends an execution still queued when its rollout's
// deadline passes.
var execNext = map[ExecState][]ExecState{
	ExecQueued:     {ExecInProgress, ExecFailed, ExecTimedOut, ExecCanceled},
	ExecInProgress: {ExecQueued, ExecSucceeded, ExecFailed, ExecTimedOut, ExecCanceled},
}

// Terminal reports whether no transition leaves the state.
func (s ExecState) Terminal() bool { return s.Valid() && len(execNext[s]) == 0 }

// Valid reports whether s is a known state.
func (s ExecState) Valid() bool {
	switch s {
	case ExecQueued, ExecInProgress, ExecSucceeded, ExecFailed, ExecTimedOut, ExecCanceled:
		return true
	}
	return false
}

// CanTransition reports whether an execution may go from s to to.
func (s ExecState) CanTransition(to ExecState) bool { return contains(execNext[s], to) }

// Reasons the store writes on executions it ends by itself.
const (
	ReasonSuperseded     = "superseded" // a newer rollout of the same skill took the device
	ReasonRolloutAborted = "rollout aborted"
	ReasonRolloutCancel  = "rollout canceled"
	ReasonDeviceRemoved  = "device removed"
)

// Reasons the controller gives executions it ends or that cannot progress
// (docs/rollouts.md). Reasons of queued executions are computed when read,
// not stored.
const (
	ReasonDeadline       = "rollout deadline passed" // + " (" + deadline + ")"
	ReasonWaitingCanary  = "waiting for canary"
	ReasonPaused         = "paused"
	ReasonMaxInFlight    = "waiting for a slot"     // + " (max in flight N)"
	ReasonRate           = "waiting for start rate" // + " (N/min)"
	ReasonOfflineSince   = "offline since"          // + " " + RFC 3339 time
	ReasonOffline        = "offline"                // never seen online
	ReasonInstalledWait  = "installed, waiting for" // + " internet", ...
	ReasonWaitingToStart = "waiting to start"
)

// Strategy paces a rollout.
type Strategy struct {
	// Canary devices go first; the rest start only once all canaries
	// succeeded. 0 = no canary phase.
	Canary int `json:"canary"`
	// MaxInFlight caps executions in progress at once; 0 = no cap.
	MaxInFlight int `json:"max_in_flight"`
	// Abort when FailureThresholdPct percent of at least MinExecuted ended
	// executions failed or timed out; 0 = never abort automatically.
	FailureThresholdPct float64 `json:"failure_threshold_pct"`
	MinExecuted         int     `json:"min_executed"`
	// Timeout ends an execution in progress this long as timed_out; 0 = none.
	// It is per device: it does not cover executions still queued.
	Timeout time.Duration `json:"timeout"`
	// Deadline, counted from the rollout's creation, ends the executions
	// still queued then as timed_out (ReasonDeadline); executions in progress
	// are left to Timeout. 0 = none.
	Deadline time.Duration `json:"deadline"`
	// RatePerMin caps how many executions start in any one minute (AWS IoT
	// Jobs' maximumPerMinute); 0 = no cap.
	RatePerMin int `json:"rate_per_min"`
	// RampBasePerMin, when set, starts the rate there and doubles it every
	// RampEvery (1 minute when 0) up to RatePerMin (AWS IoT Jobs'
	// exponential rollout). It needs RatePerMin, and must not exceed it.
	RampBasePerMin int           `json:"ramp_base_per_min"`
	RampEvery      time.Duration `json:"ramp_every"`
}

// DefaultRampEvery is how often a ramp doubles its rate when RampEvery is 0.
const DefaultRampEvery = time.Minute

// StartRate is the start rate per minute in force elapsed after the rollout
// started: RatePerMin, or with a ramp RampBasePerMin·2^⌊elapsed/RampEvery⌋
// capped at RatePerMin. 0 means no cap.
func (s Strategy) StartRate(elapsed time.Duration) int {
	if s.RatePerMin <= 0 || s.RampBasePerMin <= 0 {
		return s.RatePerMin
	}
	every := s.RampEvery
	if every <= 0 {
		every = DefaultRampEvery
	}
	rate := s.RampBasePerMin
	for steps := max(elapsed, 0) / every; steps > 0 && rate < s.RatePerMin; steps-- {
		rate *= 2
	}
	return min(rate, s.RatePerMin)
}

// Validate checks the ranges.
func (s Strategy) Validate() error {
	switch {
	case s.Canary < 0:
		return Errorf(EINVALID, "canary %d: must not be negative", s.Canary)
	case s.MaxInFlight < 0:
		return Errorf(EINVALID, "max in flight %d: must not be negative", s.MaxInFlight)
	case s.FailureThresholdPct < 0 || s.FailureThresholdPct > 100:
		return Errorf(EINVALID, "failure threshold %g%%: want 0 to 100", s.FailureThresholdPct)
	case s.MinExecuted < 0:
		return Errorf(EINVALID, "min executed %d: must not be negative", s.MinExecuted)
	case s.Timeout < 0:
		return Errorf(EINVALID, "timeout %s: must not be negative", s.Timeout)
	case s.Deadline < 0:
		return Errorf(EINVALID, "deadline %s: must not be negative", s.Deadline)
	case s.RatePerMin < 0:
		return Errorf(EINVALID, "rate %d/min: must not be negative (0: no cap)", s.RatePerMin)
	case s.RampBasePerMin < 0:
		return Errorf(EINVALID, "ramp %d/min: must not be negative (0: no ramp)", s.RampBasePerMin)
	case s.RampEvery < 0:
		return Errorf(EINVALID, "ramp interval %s: must not be negative", s.RampEvery)
	case s.RampBasePerMin > 0 && s.RatePerMin == 0:
		return Errorf(EINVALID, "ramp %d/min: needs a rate to ramp up to, e.g. rate %d/min", s.RampBasePerMin, 4*s.RampBasePerMin)
	case s.RampBasePerMin > s.RatePerMin && s.RatePerMin > 0:
		return Errorf(EINVALID, "ramp %d/min above the rate %d/min: the ramp starts below the rate it climbs to", s.RampBasePerMin, s.RatePerMin)
	case s.RampEvery > 0 && s.RampBasePerMin == 0:
		return Errorf(EINVALID, "ramp interval %s: needs a ramp base rate", s.RampEvery)
	}
	return nil
}

// Rollout is one operator request to install or uninstall a skill on a set
// of devices, resolved when it is created (a snapshot, like Mender's static
// groups; devices that join a tag later get the skill from assignments).
type Rollout struct {
	ID      int64         `json:"id"`
	SkillID string        `json:"skill_id"`
	Version string        `json:"version,omitempty"` // install: pinned at creation ("" asks for the latest)
	Action  RolloutAction `json:"action"`
	Targets []Target      `json:"targets"` // union of devices; at least one
	Strategy

	State     RolloutState `json:"state"`
	Reason    string       `json:"reason,omitempty"` // why it failed, aborted or was canceled
	CreatedBy string       `json:"created_by,omitempty"`

	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	StartedAt  time.Time `json:"started_at"`  // first entered in_progress
	FinishedAt time.Time `json:"finished_at"` // entered a terminal state

	// Counts of executions by state, filled by Get and List.
	Counts map[ExecState]int `json:"counts"`
}

// Validate checks what a new rollout must have.
func (r *Rollout) Validate() error {
	if err := ValidSkillID(r.SkillID); err != nil {
		return err
	}
	switch r.Action {
	case RolloutInstall:
		if r.Version != "" {
			if err := ValidVersion(r.Version); err != nil {
				return err
			}
		}
	case RolloutUninstall:
		if r.Version != "" {
			return Errorf(EINVALID, "uninstall %s: takes no version", r.SkillID)
		}
	default:
		return Errorf(EINVALID, "rollout action %q: want install or uninstall", r.Action)
	}
	if len(r.Targets) == 0 {
		return Errorf(EINVALID, "rollout %s %s: no target", r.Action, r.SkillID)
	}
	for _, t := range r.Targets {
		if err := t.Validate(); err != nil {
			return err
		}
	}
	return r.Strategy.Validate()
}

// Execution is one device's part in a rollout.
type Execution struct {
	RolloutID    int64     `json:"rollout_id"`
	DeviceID     string    `json:"device_id"`
	State        ExecState `json:"state"`
	Reason       string    `json:"reason,omitempty"`
	Canary       bool      `json:"canary"`
	Attempts     int       `json:"attempts"`                // times it entered in_progress
	SupersededBy int64     `json:"superseded_by,omitempty"` // the rollout that canceled it
	QueuedAt     time.Time `json:"queued_at"`
	StartedAt    time.Time `json:"started_at"` // last entered in_progress
	FinishedAt   time.Time `json:"finished_at"`
	UpdatedAt    time.Time `json:"updated_at"`

	// Blocked is set by the controller when it reads a queued execution
	// that cannot progress until something outside the rollout changes
	// (its device is offline, or it waits for a canary whose device is).
	// Not stored; Reason then says why.
	Blocked bool `json:"blocked,omitempty"`
}

// RolloutFilter narrows ListRollouts. The zero value lists all, newest first.
type RolloutFilter struct {
	SkillID string
	States  []RolloutState
	Limit   int // 0 = no limit
}

// ExecutionFilter narrows ListExecutions.
type ExecutionFilter struct {
	RolloutID int64 // 0 = any
	DeviceID  string
	States    []ExecState
	Limit     int // 0 = no limit
}

// RolloutService keeps rollouts and executions.
//
// CreateRollout resolves the targets to devices, creates one queued
// execution per device (the first Strategy.Canary of them, online devices
// first and then by id, marked canary) and cancels, with ReasonSuperseded,
// every unfinished execution of an older rollout of the same skill on those
// devices: a newer rollout supersedes an older one instead of queueing behind
// it. A target that matches no device is ErrInvalid.
//
// Transitions are guarded by the state machines above; an illegal one is
// ErrInvalid and changes nothing. Aborting or canceling a rollout cancels its
// unfinished executions. Every transition is recorded in the audit log in the
// same transaction.
type RolloutService interface {
	CreateRollout(ctx context.Context, r *Rollout) ([]*Execution, error)
	GetRollout(ctx context.Context, id int64) (*Rollout, error)
	ListRollouts(ctx context.Context, f RolloutFilter) ([]*Rollout, error)
	// UpdateRolloutState moves rollout id to to. With from set, only from
	// that state (ECONFLICT otherwise): the engine decides on a state it
	// read, and an operator's pause in between must win. from "" is any.
	UpdateRolloutState(ctx context.Context, id int64, from, to RolloutState, reason string) (*Rollout, error)

	GetExecution(ctx context.Context, rolloutID int64, deviceID string) (*Execution, error)
	ListExecutions(ctx context.Context, f ExecutionFilter) ([]*Execution, error)
	TransitionExecution(ctx context.Context, rolloutID int64, deviceID string, to ExecState, reason string) (*Execution, error)
	// StartExecutions starts queued executions in one transaction: for
	// each, it puts the device assignment that makes the change, computes
	// the device's desired document (DesiredFor) and moves the execution to
	// in_progress. A start whose assignment names a device, skill or version
	// that is gone gets ErrNotFound in its ExecStarted and changes nothing;
	// any other error changes nothing at all.
	StartExecutions(ctx context.Context, starts []ExecStart) ([]ExecStarted, error)
	// TransitionExecutions applies moves in one transaction, each as
	// TransitionExecution would. A move the state machine refuses, or of an
	// execution that is gone, is that move's error in the result (EINVALID,
	// ENOTFOUND) and changes nothing; any other error changes nothing at
	// all (the returned error, the result nil).
	TransitionExecutions(ctx context.Context, moves []ExecMove) ([]error, error)
}

// ExecMove is one execution state change of TransitionExecutions.
type ExecMove struct {
	RolloutID int64
	DeviceID  string
	To        ExecState
	Reason    string
}

// ExecStart is one execution to start and the device assignment it puts
// (its Target is the execution's device).
type ExecStart struct {
	RolloutID  int64
	Assignment *Assignment
	// KeepSettings keeps the settings of the device assignment of the skill
	// that Assignment replaces, unless that one is an uninstall: an install
	// a rollout starts keeps the device's configuration
	// (controller.assignmentFor). It is read in the start's own transaction.
	KeepSettings bool
}

// ExecStarted is what StartExecutions did with one ExecStart: the execution
// in progress and the device's desired document with the assignment, or Err
// (ENOTFOUND) and nothing changed.
type ExecStarted struct {
	Execution *Execution
	Desired   Desired
	Err       error
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// ParseRate reads a start rate as the CLI and the dashboard take it: "N/min"
// or a bare N (per minute); "" and "0" are no cap. A bad or negative rate is
// ErrInvalid naming the form wanted.
func ParseRate(s string) (int, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	num := strings.TrimSpace(strings.TrimSuffix(t, "/min"))
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, Errorf(EINVALID, "rate %q: want a whole number of starts per minute, e.g. 10/min (0: no cap)", s)
	}
	return n, nil
}
