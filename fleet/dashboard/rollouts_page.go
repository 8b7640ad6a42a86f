package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

type rolloutsData struct {
	Rollouts []*fleet.Rollout
	Skills   []*fleet.SkillVersion
	Tags     []string
	Skill    string // preselected in the form
}

func (d *Dashboard) rollouts(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	if err := d.view.ready(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	rs, err := d.cfg.Fleet.ListRollouts(ctx, fleet.RolloutFilter{Limit: 100})
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	vs, err := d.cfg.Fleet.ListSkills(ctx)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	d.render(w, r, "rollouts", ss, page{Title: "Rollouts", Nav: "rollouts", Watch: "rollout/",
		Data: rolloutsData{Rollouts: rs, Skills: vs, Tags: d.view.tags(), Skill: r.URL.Query().Get("skill")}})
}

// rolloutForm reads the create form into a rollout, its skill resolved
// like the CLI's; a bad field is EINVALID naming it.
func (d *Dashboard) rolloutForm(r *http.Request) (*fleet.Rollout, error) {
	ro, err := parseRolloutForm(r.PostForm)
	if err != nil {
		return nil, err
	}
	if ro.SkillID, err = d.resolve(r, r.PostFormValue("skill")); err != nil {
		return nil, err
	}
	return ro, nil
}

// parseRolloutForm reads every field of the create form but the skill:
// action, version, target kind and list, and the strategy, validated.
func parseRolloutForm(form url.Values) (*fleet.Rollout, error) {
	ro := &fleet.Rollout{Action: fleet.RolloutAction(form.Get("action")), Version: strings.TrimSpace(form.Get("version"))}
	if ro.Action != fleet.RolloutInstall && ro.Action != fleet.RolloutUninstall {
		return nil, fleet.Errorf(fleet.EINVALID, "action %q: choose install or uninstall", ro.Action)
	}
	list := strings.FieldsFunc(form.Get("targets"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' })
	switch form.Get("target") {
	case "all":
		ro.Targets = []fleet.Target{fleet.AllTarget()}
	case "tags":
		for _, t := range list {
			ro.Targets = append(ro.Targets, fleet.TagTarget(t))
		}
	case "devices":
		for _, t := range list {
			ro.Targets = append(ro.Targets, fleet.DeviceTarget(t))
		}
	default:
		return nil, fleet.Errorf(fleet.EINVALID, "target: choose all devices, tags or devices")
	}
	if len(ro.Targets) == 0 {
		return nil, fleet.Errorf(fleet.EINVALID, "targets: name at least one %s", strings.TrimSuffix(form.Get("target"), "s"))
	}
	for _, t := range ro.Targets {
		if err := t.Validate(); err != nil {
			return nil, err
		}
	}
	ints := []struct {
		field string
		into  *int
	}{{"canary", &ro.Canary}, {"max_in_flight", &ro.MaxInFlight}, {"min_executed", &ro.MinExecuted}}
	for _, f := range ints {
		if raw := strings.TrimSpace(form.Get(f.field)); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil {
				return nil, fleet.Errorf(fleet.EINVALID, "%s %q: want a whole number", f.field, raw)
			}
			*f.into = n
		}
	}
	if raw := strings.TrimSpace(form.Get("failure_threshold_pct")); raw != "" {
		p, err := strconv.ParseFloat(raw, 64)
		if err != nil || p != p { // NaN compares unequal to itself
			return nil, fleet.Errorf(fleet.EINVALID, "failure threshold %q: want a percentage such as 20", raw)
		}
		ro.FailureThresholdPct = p
	}
	durations := []struct {
		field, what string
		into        *time.Duration
	}{{"timeout", "timeout per device", &ro.Timeout}, {"deadline", "deadline", &ro.Deadline}}
	for _, f := range durations {
		if raw := strings.TrimSpace(form.Get(f.field)); raw != "" {
			t, err := time.ParseDuration(raw)
			if err != nil {
				return nil, fleet.Errorf(fleet.EINVALID, "%s %q: want a duration such as 10m", f.what, raw)
			}
			*f.into = t
		}
	}
	var err error
	if ro.RatePerMin, err = fleet.ParseRate(form.Get("rate")); err != nil {
		return nil, err
	}
	return ro, ro.Strategy.Validate()
}

func (d *Dashboard) createRollout(w http.ResponseWriter, r *http.Request, ss session) {
	ro, err := d.rolloutForm(r)
	if err == nil {
		ro, err = d.cfg.Fleet.CreateRollout(r.Context(), actor, ro)
	}
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/rollouts/"+itoa64(ro.ID), http.StatusSeeOther)
}

// updateAll installs a skill's latest version on every device that does
// not report it yet, skipping the devices already current.
func (d *Dashboard) updateAll(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	if err := d.view.ready(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	skill, err := d.resolve(r, r.PostFormValue("skill"))
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	latest, _, err := d.cfg.Fleet.GetSkill(ctx, skill)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	ids := d.view.behind(latest.SkillID, latest.Version)
	if len(ids) == 0 {
		d.fail(w, r, ss, fleet.Errorf(fleet.ECONFLICT, "every device already has %s %s", latest.SkillID, latest.Version))
		return
	}
	ro := &fleet.Rollout{SkillID: latest.SkillID, Version: latest.Version, Action: fleet.RolloutInstall}
	for _, id := range ids {
		ro.Targets = append(ro.Targets, fleet.DeviceTarget(id))
	}
	if ro, err = d.cfg.Fleet.CreateRollout(ctx, actor, ro); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/rollouts/"+itoa64(ro.ID), http.StatusSeeOther)
}

type execRow struct {
	*fleet.Execution
	Why   string    // the reason, or why a queued one waits
	Since time.Time // when the device went offline, for "offline since"
}

type rolloutData struct {
	R         *fleet.Rollout
	Execs     []execRow
	Total     int
	Done      int // succeeded
	Bad       int // failed or timed out
	CanPause  bool
	CanResume bool
	CanAbort  bool
	Terminal  bool
}

func (d *Dashboard) rollout(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, ss, fleet.Errorf(fleet.ENOTFOUND, "no rollout %q", r.PathValue("id")))
		return
	}
	if err := d.view.ready(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	ro, execs, err := d.cfg.Fleet.GetRollout(ctx, id)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := rolloutData{R: ro, Terminal: ro.State.Terminal(),
		CanPause:  ro.State.CanTransition(fleet.RolloutPaused),
		CanResume: ro.State == fleet.RolloutPaused,
		CanAbort:  ro.State.CanTransition(fleet.RolloutAborted)}
	for _, e := range execs {
		data.Total++
		switch e.State {
		case fleet.ExecSucceeded:
			data.Done++
		case fleet.ExecFailed, fleet.ExecTimedOut:
			data.Bad++
		}
		why, since := d.why(e)
		data.Execs = append(data.Execs, execRow{Execution: e, Why: why, Since: since})
	}
	d.render(w, r, "rollout", ss, page{Title: "Rollout " + itoa64(id), Nav: "rollouts", Watch: "rollout/" + itoa64(id) + " device/", Data: data})
}

// why is an execution's reason (the controller's: why it ended, or why an
// unfinished one waits); a queued or in-progress one whose device is
// offline says since when, the time shown in the browser's zone.
func (d *Dashboard) why(e *fleet.Execution) (string, time.Time) {
	if e.State != fleet.ExecQueued && e.State != fleet.ExecInProgress {
		return e.Reason, time.Time{}
	}
	online, r := d.view.presence(e.DeviceID)
	switch {
	case r == nil || online:
		return e.Reason, time.Time{}
	case r.LastSeen.IsZero():
		return "device never connected", time.Time{}
	}
	return "device offline since", r.LastSeen
}

func (d *Dashboard) rolloutAction(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, ss, fleet.Errorf(fleet.ENOTFOUND, "no rollout %q", r.PathValue("id")))
		return
	}
	switch r.PathValue("action") {
	case "pause":
		_, err = d.cfg.Fleet.PauseRollout(ctx, actor, id)
	case "resume":
		_, err = d.cfg.Fleet.ResumeRollout(ctx, actor, id)
	case "abort":
		_, err = d.cfg.Fleet.AbortRollout(ctx, actor, id, r.PostFormValue("rollback") == "on")
	default:
		err = fleet.Errorf(fleet.ENOTFOUND, "no such rollout action: %s", r.PathValue("action"))
	}
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/rollouts/"+itoa64(id), http.StatusSeeOther)
}
