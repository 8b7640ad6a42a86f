//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// fleetPoll is how often --wait and `rollout watch` ask for progress.
const fleetPoll = time.Second

// fleetWaitUnreachable is how long --wait keeps polling a gateway that does not
// answer (a restart mid-rollout) before it gives up.
const fleetWaitUnreachable = time.Minute

// fleetNotDone is the exit code of --wait and `rollout watch` when every
// online target finished but executions are left waiting (offline
// devices): the rollout is not done and goes on.
const fleetNotDone = 3

// fleetHeartbeat is how often --wait repeats an unchanged progress line.
const fleetHeartbeat = 10 * time.Second

// fleetStrategyFlags are the rollout pacing flags.
type fleetStrategyFlags struct {
	canary, maxInFlight, minFinished int
	threshold                        string // "20%" or "20"
	rate, ramp                       string // "10/min"
	timeout, deadline, rampEvery     time.Duration
}

func (s *fleetStrategyFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&s.canary, "canary", 0, "the first N devices must succeed before the rest start")
	fl.IntVar(&s.maxInFlight, "max-in-flight", 0, "at most N devices in progress at once (0: no cap)")
	fl.StringVar(&s.threshold, "failure-threshold", "", "abort when this share of finished executions failed, e.g. 20% (0: never)")
	fl.IntVar(&s.minFinished, "min-finished", 0, "judge the failure threshold only after N executions finished")
	fl.IntVar(&s.minFinished, "min-executed", 0, "old name of --min-finished")
	_ = fl.MarkDeprecated("min-executed", "use --min-finished")
	fl.DurationVar(&s.timeout, "timeout", 0, "per device: end an execution in progress this long as timed out, e.g. 10m\n"+
		"(0: none; devices still queued are not covered, see --deadline)")
	fl.DurationVar(&s.deadline, "deadline", 0, "whole rollout: executions still queued this long after creation end as timed out, e.g. 2h (0: none)")
	fl.StringVar(&s.rate, "rate", "", "start at most N executions per minute, e.g. 10/min (0: no cap)")
	fl.StringVar(&s.ramp, "ramp", "", "with --rate: begin at this rate and double it every --ramp-every up to --rate, e.g. 2/min")
	fl.DurationVar(&s.rampEvery, "ramp-every", 0, "how often --ramp doubles the rate (default 1m)")
}

func (s *fleetStrategyFlags) strategy() (api.Strategy, error) {
	st := api.Strategy{
		Canary: s.canary, MaxInFlight: s.maxInFlight, MinExecuted: s.minFinished, Timeout: api.Duration(s.timeout),
		Deadline: api.Duration(s.deadline), RampEvery: api.Duration(s.rampEvery),
	}
	switch {
	case s.canary < 0:
		return st, fmt.Errorf("--canary %d: must not be negative", s.canary)
	case s.maxInFlight < 0:
		return st, fmt.Errorf("--max-in-flight %d: must not be negative", s.maxInFlight)
	case s.minFinished < 0:
		return st, fmt.Errorf("--min-finished %d: must not be negative", s.minFinished)
	case s.timeout < 0:
		return st, fmt.Errorf("--timeout %s: must not be negative (0: none)", s.timeout)
	case s.deadline < 0:
		return st, fmt.Errorf("--deadline %s: must not be negative (0: none)", s.deadline)
	case s.rampEvery < 0:
		return st, fmt.Errorf("--ramp-every %s: must not be negative", s.rampEvery)
	}
	var err error
	if st.RatePerMin, err = fleet.ParseRate(s.rate); err != nil {
		return st, fmt.Errorf("--%w", err)
	}
	if st.RampBasePerMin, err = fleet.ParseRate(s.ramp); err != nil {
		return st, fmt.Errorf("--ramp: %w", err)
	}
	switch {
	case st.RampBasePerMin > 0 && st.RatePerMin == 0:
		return st, fmt.Errorf("--ramp %s needs --rate, the rate it climbs to (e.g. --rate %d/min)", s.ramp, 4*st.RampBasePerMin)
	case st.RampBasePerMin > st.RatePerMin && st.RatePerMin > 0:
		return st, fmt.Errorf("--ramp %s is above --rate %s: the ramp starts below the rate it climbs to", s.ramp, s.rate)
	case s.rampEvery > 0 && st.RampBasePerMin == 0:
		return st, errors.New("--ramp-every needs --ramp, the rate to begin at")
	}
	if s.threshold != "" {
		p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.threshold), "%")), 64)
		if err != nil || p < 0 || p > 100 {
			return st, fmt.Errorf("--failure-threshold %q: want a percentage from 0 to 100, e.g. 20%%", s.threshold)
		}
		st.FailureThresholdPct = p
	}
	return st, nil
}

// splitSkillArg splits SKILL[@VERSION].
func splitSkillArg(arg string) (name, version string, err error) {
	name, version, hasVersion := strings.Cut(arg, "@")
	switch {
	case strings.TrimSpace(name) == "":
		return "", "", fmt.Errorf("%q: want SKILL or SKILL@VERSION", arg)
	case hasVersion && version == "":
		return "", "", fmt.Errorf("%q: empty version after @", arg)
	}
	return name, version, nil
}

func (a *app) newFleetInstallCmd(f *fleetFlags, action fleet.RolloutAction) *cobra.Command {
	var (
		tf   fleetTargetFlags
		sf   fleetStrategyFlags
		wait bool
		poll time.Duration
	)
	use, short := "install SKILL[@VERSION]", "Install a skill on devices, as a rollout"
	if action == fleet.RolloutUninstall {
		use, short = "uninstall SKILL", "Uninstall a skill from devices, as a rollout"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\n" +
			"The skill name is resolved against the catalog first: a name that matches no skill is refused with\n" +
			"the gateway's suggestion and nothing is created. Without @VERSION the latest version is installed.\n" +
			"--timeout is per device, counted from its start; devices still queued (offline) are not covered:\n" +
			"--deadline bounds the whole rollout. --rate caps starts per minute (AWS IoT Jobs' maximumPerMinute);\n" +
			"--ramp begins lower and doubles every --ramp-every up to --rate.\n\n" +
			"--wait follows the rollout, printing its progress (again every 10 s while nothing changes), until it\n" +
			"ends or every online target finished. Exit codes: 0 succeeded; 1 failed, aborted or canceled;\n" +
			"3 not done: executions are left waiting for offline devices, each listed with its reason\n" +
			"(the rollout goes on: `chorus fleet rollout watch ID`).",
		Args: fleetArgs(1),
	}
	cmd.RunE = a.fleetRunE(f, func(args []string) error {
		_, version, err := splitSkillArg(args[0])
		if err == nil && version != "" && action == fleet.RolloutUninstall {
			err = fmt.Errorf("%q: uninstall takes no version", args[0])
		}
		if err == nil {
			_, err = tf.list()
		}
		if err == nil {
			_, err = sf.strategy()
		}
		if err == nil && poll <= 0 {
			err = errors.New("--poll-interval must be positive")
		}
		return err
	}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
		name, version, _ := splitSkillArg(args[0])
		targets, _ := tf.list()
		strategy, _ := sf.strategy()
		sv, err := c.Resolve(ctx, name)
		if err != nil {
			return err
		}
		if sv.SkillID != name {
			fmt.Fprintf(a.stderr, "%s is %s\n", name, sv.SkillID)
		}
		if action == fleet.RolloutInstall && version == "" {
			version = sv.Version // pin the latest now, so the rollout says what it installs
		}
		r, err := c.CreateRollout(ctx, api.RolloutRequest{
			SkillID: sv.SkillID, Version: version, Action: action, Targets: targets, Strategy: strategy,
		})
		if err != nil {
			return err
		}
		if !wait {
			if f.json() {
				return fleetJSON(a.stdout, api.RolloutResponse{Rollout: r})
			}
			fmt.Fprintf(a.stdout, "rollout %d created: %s (%s); follow it with `chorus fleet rollout watch %d`\n",
				r.ID, describeRollout(r), r.State, r.ID)
			return nil
		}
		fmt.Fprintf(a.stderr, "rollout %d created: %s\n", r.ID, describeRollout(r))
		return a.followRollout(ctx, c, f, r.ID, poll)
	})
	tf.register(cmd, string(action))
	sf.register(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the rollout until it ends or only offline devices are left; exit 0 succeeded, 1 failed, 3 not done")
	a.addFleetPollFlag(cmd, &poll)
	return cmd
}

func (a *app) addFleetPollFlag(cmd *cobra.Command, poll *time.Duration) {
	cmd.Flags().DurationVar(poll, "poll-interval", fleetPoll, "how often to ask for progress")
	cmd.Flags().DurationVar(&a.heartbeat, "heartbeat", fleetHeartbeat, "how often to repeat unchanged progress")
	_ = cmd.Flags().MarkHidden("poll-interval")
	_ = cmd.Flags().MarkHidden("heartbeat")
}

// describeRollout is "install weather.chorus@1.0.0 on tag kitchen".
func describeRollout(r api.Rollout) string {
	skill := r.SkillID
	if r.Version != "" {
		skill += "@" + r.Version
	}
	prep := "on"
	if r.Action == fleet.RolloutUninstall {
		prep = "from"
	}
	return fmt.Sprintf("%s %s %s %s", r.Action, skill, prep, describeTargets(r.Targets))
}

func describeTargets(ts []fleet.Target) string {
	if len(ts) == 0 {
		return "no devices"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = describeTarget(t)
	}
	return strings.Join(parts, ", ")
}

// describeTarget is a target in prose: "device pi-1", "tag kitchen", "all devices".
func describeTarget(t fleet.Target) string {
	if t.Kind == fleet.TargetAll {
		return "all devices"
	}
	return string(t.Kind) + " " + t.Value
}

// followRollout polls until the rollout ends or is settled (only blocked
// executions left: api.RolloutDetail.Settled), with a live progress line on
// stderr. nil only when it succeeded; exit 3 when it is not done.
func (a *app) followRollout(ctx context.Context, c *fleetclient.Client, f *fleetFlags, id int64, poll time.Duration) error {
	d, err := a.pollRollout(ctx, c, id, poll)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped following rollout %d; it goes on (`chorus fleet rollout watch %d`)", id, id)
		}
		return err
	}
	if f.json() {
		d.Executions = fleetList(d.Executions)
		if err := fleetJSON(a.stdout, d); err != nil {
			return err
		}
	}
	r := d.Rollout
	if !r.Terminal() {
		left := d.Unfinished()
		for _, e := range left {
			fmt.Fprintf(a.stderr, "  %s: %s%s\n", e.DeviceID, e.State, fleetPrefixed(": ", e.Reason))
		}
		return &exitError{code: fleetNotDone, err: fmt.Errorf("rollout %d not done: every online device finished; %d left waiting "+
			"for offline devices (listed above); it goes on: `chorus fleet rollout watch %d`", r.ID, len(left), r.ID)}
	}
	if r.State == fleet.RolloutSucceeded {
		if !f.json() {
			fmt.Fprintf(a.stdout, "rollout %d succeeded: %s on %d devices\n", r.ID, r.Action, r.Counts.Succeeded)
		}
		return nil
	}
	for _, e := range d.Executions {
		if e.State != fleet.ExecSucceeded {
			fmt.Fprintf(a.stderr, "  %s: %s%s\n", e.DeviceID, e.State, fleetPrefixed(": ", e.Reason))
		}
	}
	return &exitError{code: 1, err: fmt.Errorf("rollout %d %s%s", r.ID, r.State, fleetPrefixed(": ", r.Reason))}
}

func fleetPrefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// pollRollout follows the rollout until it is terminal or settled
// (fleetclient.WaitRollout), printing progress when it changes. While the
// counts move it reads only them; it reads the executions when they stand
// still or the rollout ended (WaitOptions.ExecutionsWhenStill). A gateway that stops answering is
// waited for up to fleetWaitUnreachable, so a restart does not end the wait.
func (a *app) pollRollout(ctx context.Context, c *fleetclient.Client, id int64, poll time.Duration) (api.RolloutDetail, error) {
	p := newFleetProgress(a.stderr)
	p.heartbeat = a.heartbeat
	defer p.done()
	return c.WaitRollout(ctx, id, fleetclient.WaitOptions{
		Interval:            poll,
		Until:               api.RolloutDetail.Settled,
		ExecutionsWhenStill: true, // a moving rollout is polled by its counts
		Progress:            func(d api.RolloutDetail) { p.show(progressLine(d.Rollout)) },
		Unreachable:         fleetWaitUnreachable,
		OnUnreachable:       func() { p.show(fmt.Sprintf("rollout %d: gateway not answering, retrying", id)) },
	})
}

// progressLine is "rollout 7 in_progress: 2/3 succeeded, 0 failed, 1 in progress".
func progressLine(r api.Rollout) string {
	n := r.Counts
	s := fmt.Sprintf("rollout %d %s: %d/%d succeeded, %d failed, %d in progress", r.ID, r.State, n.Succeeded, n.Total(), n.Failed, n.InProgress)
	for _, extra := range []struct {
		n    int
		what string
	}{{n.TimedOut, "timed out"}, {n.Queued, "queued"}, {n.Canceled, "canceled"}} {
		if extra.n > 0 {
			s += fmt.Sprintf(", %d %s", extra.n, extra.what)
		}
	}
	return s
}

func (a *app) newFleetRolloutCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rollout",
		Aliases: []string{"rollouts"},
		Short:   "List, show, watch, pause, resume and abort rollouts",
	}
	cmd.AddCommand(
		a.newFleetRolloutListCmd(f),
		a.newFleetRolloutShowCmd(f),
		a.newFleetRolloutWatchCmd(f),
		a.newFleetRolloutActionCmd(f, "pause", "Stop starting new executions; those in progress finish"),
		a.newFleetRolloutActionCmd(f, "resume", "Continue a paused rollout"),
		a.newFleetRolloutActionCmd(f, "abort", "End a rollout; --rollback also undoes what it did"),
	)
	return cmd
}

func (a *app) newFleetRolloutListCmd(f *fleetFlags) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List rollouts",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			rs, err := c.Rollouts(ctx, fleet.RolloutState(state))
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.RolloutsResponse{Rollouts: fleetList(rs)})
			}
			t := newFleetTable(a.stdout, "ID", "ACTION", "SKILL", "VERSION", "TARGETS", "STATE", "SUCCEEDED", "FAILED", "UPDATED")
			for _, r := range rs {
				t.row(strconv.FormatInt(r.ID, 10), string(r.Action), r.SkillID, r.Version, describeTargets(r.Targets), string(r.State),
					fmt.Sprintf("%d/%d", r.Counts.Succeeded, r.Counts.Total()), strconv.Itoa(r.Counts.Failed+r.Counts.TimedOut), fleetTime(r.UpdatedAt))
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&state, "state", "", "only rollouts in this state (queued, in_progress, paused, succeeded, failed, aborted, canceled)")
	return cmd
}

// rolloutID parses the ID argument.
func rolloutID(args []string) (int64, error) {
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("rollout ID %q: want a positive number", args[0])
	}
	return id, nil
}

func checkRolloutID(args []string) error {
	_, err := rolloutID(args)
	return err
}

func (a *app) newFleetRolloutShowCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a rollout and each device's execution",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, checkRolloutID, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			id, _ := rolloutID(args)
			d, err := c.Rollout(ctx, id)
			if err != nil {
				return err
			}
			if f.json() {
				d.Executions = fleetList(d.Executions)
				return fleetJSON(a.stdout, d)
			}
			return a.printRollout(d)
		}),
	}
}

func (a *app) printRollout(d api.RolloutDetail) error {
	r, s := d.Rollout, d.Rollout.Strategy
	strategy := fmt.Sprintf("canary %d, max in flight %d, failure threshold %g%% after %d finished, timeout %s per device",
		s.Canary, s.MaxInFlight, s.FailureThresholdPct, s.MinExecuted, time.Duration(s.Timeout))
	if s.Deadline > 0 {
		strategy += fmt.Sprintf(", deadline %s", time.Duration(s.Deadline))
	}
	if s.RatePerMin > 0 {
		strategy += fmt.Sprintf(", rate %d/min", s.RatePerMin)
	}
	if s.RampBasePerMin > 0 {
		every := time.Duration(s.RampEvery)
		if every <= 0 {
			every = fleet.DefaultRampEvery
		}
		strategy += fmt.Sprintf(" ramping from %d/min, doubling every %s", s.RampBasePerMin, every)
	}
	err := fleetKV(a.stdout,
		"rollout", strconv.FormatInt(r.ID, 10), "action", describeRollout(r), "state", string(r.State),
		"reason", r.Reason, "progress", progressLine(r), "strategy", strategy,
		"created", fleetTime(r.CreatedAt), "updated", fleetTime(r.UpdatedAt))
	if err != nil || len(d.Executions) == 0 {
		return err
	}
	fmt.Fprintln(a.stdout)
	t := newFleetTable(a.stdout, "DEVICE", "STATE", "ATTEMPTS", "STARTED", "FINISHED", "REASON")
	for _, e := range d.Executions {
		t.row(e.DeviceID, string(e.State), strconv.Itoa(e.Attempts), fleetTime(e.StartedAt), fleetTime(e.FinishedAt), e.Reason)
	}
	return t.flush()
}

func (a *app) newFleetRolloutWatchCmd(f *fleetFlags) *cobra.Command {
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a rollout until it ends; exit 0 succeeded, 1 failed, 3 not done (only offline devices left)",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, func(args []string) error {
			if poll <= 0 {
				return errors.New("--poll-interval must be positive")
			}
			return checkRolloutID(args)
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			id, _ := rolloutID(args)
			return a.followRollout(ctx, c, f, id, poll)
		}),
	}
	a.addFleetPollFlag(cmd, &poll)
	return cmd
}

func (a *app) newFleetRolloutActionCmd(f *fleetFlags, action, short string) *cobra.Command {
	var rollback bool
	cmd := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, checkRolloutID, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			id, _ := rolloutID(args)
			var r api.Rollout
			var err error
			switch action {
			case "pause":
				r, err = c.PauseRollout(ctx, id)
			case "resume":
				r, err = c.ResumeRollout(ctx, id)
			default:
				r, err = c.AbortRollout(ctx, id, rollback)
			}
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.RolloutResponse{Rollout: r})
			}
			fmt.Fprintf(a.stdout, "rollout %d %s\n", r.ID, r.State)
			return nil
		}),
	}
	if action == "abort" {
		cmd.Flags().BoolVar(&rollback, "rollback", false, "also undo what the rollout did on the devices it reached")
	}
	return cmd
}
