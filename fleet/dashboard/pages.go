package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

const (
	pageSize       = 50 // devices per page of the list
	attentionLimit = 20 // devices needing attention on the overview
	auditLimit     = 100
)

// activeStates are the rollouts the overview shows.
var activeStates = []fleet.RolloutState{fleet.RolloutQueued, fleet.RolloutInProgress, fleet.RolloutPaused}

type overviewData struct {
	Counts    counts
	Attention []*row
	Rollouts  []*fleet.Rollout
	Pending   []Pending
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, ss session) {
	if err := d.view.ready(r.Context()); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	rs, err := d.cfg.Fleet.ListRollouts(r.Context(), fleet.RolloutFilter{States: activeStates})
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := overviewData{Counts: d.view.counts(), Attention: d.view.attention(attentionLimit), Rollouts: rs}
	if e := d.cfg.Enrolments; e != nil {
		if data.Pending, err = e.ListPending(r.Context()); err != nil {
			d.fail(w, r, ss, err)
			return
		}
	}
	d.render(w, r, "overview", ss, page{Title: "Overview", Nav: "overview", Data: data})
}

type devicesData struct {
	Filter      deviceFilter
	Rows        []*row
	Total       int
	Page, Pages int
	Tags        []string
	Prev, Next  string // links to the neighbouring pages, "" at an end
	States      []string
}

func (d *Dashboard) devices(w http.ResponseWriter, r *http.Request, ss session) {
	if err := d.view.ready(r.Context()); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	q := r.URL.Query()
	f := deviceFilter{Q: strings.TrimSpace(q.Get("q")), Tag: q.Get("tag"), State: q.Get("state"), Skill: strings.TrimSpace(q.Get("skill"))}
	pg, _ := strconv.Atoi(q.Get("page"))
	pg = max(pg, 1)
	rows, total := d.view.list(f, pg-1, pageSize)
	pages := max((total+pageSize-1)/pageSize, 1)
	data := devicesData{Filter: f, Rows: rows, Total: total, Page: pg, Pages: pages, Tags: d.view.tags(),
		States: []string{"online", "offline", "drift", "failed", "attention"}}
	link := func(n int) string {
		v := url.Values{}
		for k, x := range map[string]string{"q": f.Q, "tag": f.Tag, "state": f.State, "skill": f.Skill} {
			if x != "" {
				v.Set(k, x)
			}
		}
		v.Set("page", strconv.Itoa(n))
		return "/devices?" + v.Encode()
	}
	if pg > 1 {
		data.Prev = link(pg - 1)
	}
	if pg < pages {
		data.Next = link(pg + 1)
	}
	d.render(w, r, "devices", ss, page{Title: "Devices", Nav: "devices", Data: data})
}

type skillRow struct {
	ID       string
	Desired  string // version in the desired document, "" when not desired
	Reported string
	State    string
	Error    string
}

type deviceData struct {
	Row          *row
	Connectivity struct {
		Network, Internet, GUI string
	}
	Birth    Birth
	HasBirth bool
	Skills   []skillRow
	Catalog  []*fleet.SkillVersion
	Audit    []*fleet.AuditEntry
	TagText  string
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "not reported"
	case *b:
		return "yes"
	}
	return "no"
}

func (d *Dashboard) device(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	id := r.PathValue("id")
	dev, err := d.cfg.Fleet.GetDevice(ctx, id)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	want, err := d.cfg.Fleet.DesiredOf(ctx, id)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	row := newRow(dev, want)
	data := deviceData{Row: row, TagText: strings.Join(row.Tags, " ")}
	if c, ok := row.ParseConnectivity(); ok {
		data.Connectivity.Network, data.Connectivity.Internet, data.Connectivity.GUI = yesNo(c.Network), yesNo(c.Internet), yesNo(c.GUI)
	} else {
		data.Connectivity.Network, data.Connectivity.Internet, data.Connectivity.GUI = "not reported", "not reported", "not reported"
	}
	if d.cfg.Birth != nil {
		data.Birth, data.HasBirth = d.cfg.Birth(id)
	}
	data.Skills = skillRows(want, row.Skills)
	if data.Catalog, err = d.cfg.Fleet.ListSkills(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	if data.Audit, err = d.cfg.Fleet.ListAudit(ctx, fleet.AuditFilter{Subject: "device/" + id}, 20); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	d.render(w, r, "device", ss, page{Title: id, Nav: "devices", Watch: "device/" + id, Data: data})
}

// skillRows joins the desired document and the report, by skill id.
func skillRows(want fleet.Desired, reported []reportedSkill) []skillRow {
	byID := map[string]*skillRow{}
	for id, s := range want.Skills {
		byID[id] = &skillRow{ID: id, Desired: s.Version, State: "not reported"}
	}
	for _, s := range reported {
		sr, ok := byID[s.ID]
		if !ok {
			sr = &skillRow{ID: s.ID}
			byID[s.ID] = sr
		}
		sr.Reported, sr.State, sr.Error = s.Version, s.State, s.Error
	}
	out := make([]skillRow, 0, len(byID))
	for _, sr := range byID {
		out = append(out, *sr)
	}
	slices.SortFunc(out, func(a, b skillRow) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (d *Dashboard) setTags(w http.ResponseWriter, r *http.Request, ss session) {
	tags := strings.FieldsFunc(r.PostFormValue("tags"), func(c rune) bool { return c == ',' || c == ' ' })
	if tags == nil {
		tags = []string{}
	}
	id := r.PathValue("id")
	if _, err := d.cfg.Fleet.SetTags(r.Context(), actor, id, tags); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/devices/"+url.PathEscape(id), http.StatusSeeOther)
}

// rotate issues the device new credentials and shows them once, as the
// API answers them: the agent needs the file to connect again.
func (d *Dashboard) rotate(w http.ResponseWriter, r *http.Request, ss session) {
	dev, creds, err := d.cfg.Fleet.RotateDevice(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	d.render(w, r, "credentials", ss, page{Title: "New credentials for " + dev.ID, Nav: "devices",
		Data: struct {
			ID    string
			Creds configs.AgentCredentials
		}{dev.ID, creds}})
}

func (d *Dashboard) remove(w http.ResponseWriter, r *http.Request, ss session) {
	if err := d.cfg.Fleet.RemoveDevice(r.Context(), actor, r.PathValue("id")); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/devices", http.StatusSeeOther)
}

// toggleSkill turns a skill on (install, latest version) or off
// (uninstall) on one device: a rollout to that device, as `chorus fleet
// install --device` makes.
func (d *Dashboard) toggleSkill(w http.ResponseWriter, r *http.Request, ss session) {
	id := r.PathValue("id")
	action := fleet.RolloutInstall
	if r.PostFormValue("action") == "off" {
		action = fleet.RolloutUninstall
	}
	skill, err := d.resolve(r, r.PostFormValue("skill"))
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	ro, err := d.cfg.Fleet.CreateRollout(r.Context(), actor, &fleet.Rollout{SkillID: skill, Action: action,
		Targets: []fleet.Target{fleet.DeviceTarget(id)}})
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/rollouts/"+itoa64(ro.ID), http.StatusSeeOther)
}

// resolve turns a typed skill name into its id with the CLI's resolver
// (a typo is refused with "did you mean").
func (d *Dashboard) resolve(r *http.Request, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fleet.Errorf(fleet.EINVALID, "skill: a skill name is required")
	}
	v, err := d.cfg.Fleet.Resolve(r.Context(), name)
	if err != nil {
		return "", err
	}
	return v.SkillID, nil
}

func (d *Dashboard) enrolment(w http.ResponseWriter, r *http.Request, ss session) {
	e := d.cfg.Enrolments
	if e == nil {
		d.notFound(w, r, ss)
		return
	}
	id := r.PathValue("id")
	var err error
	switch r.PathValue("verdict") {
	case "accept":
		err = e.Accept(r.Context(), actor, id)
	case "reject":
		err = e.Reject(r.Context(), actor, id)
	default:
		err = fleet.Errorf(fleet.ENOTFOUND, "no such enrolment action: %s", r.PathValue("verdict"))
	}
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type catalogRow struct {
	*fleet.SkillVersion
	Installed int
	Score     float64
}

type skillsData struct {
	Query      string
	Rows       []catalogRow
	DidYouMean string // the resolver's answer to a query that names no skill
	Exact      string // the skill the query names, when it names one
}

func (d *Dashboard) skills(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	if err := d.view.ready(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := skillsData{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	installed := d.view.installCounts()
	if data.Query == "" {
		vs, err := d.cfg.Fleet.ListSkills(ctx)
		if err != nil {
			d.fail(w, r, ss, err)
			return
		}
		for _, v := range vs {
			data.Rows = append(data.Rows, catalogRow{SkillVersion: v, Installed: installed[v.SkillID]})
		}
	} else {
		vs, scores, err := d.cfg.Fleet.Search(ctx, data.Query, 50)
		if err != nil {
			d.fail(w, r, ss, err)
			return
		}
		for i, v := range vs {
			data.Rows = append(data.Rows, catalogRow{SkillVersion: v, Installed: installed[v.SkillID], Score: scores[i]})
		}
		v, err := d.cfg.Fleet.Resolve(ctx, data.Query)
		switch {
		case err == nil:
			data.Exact = v.SkillID
		case fleet.ErrorCode(err) == fleet.ENOTFOUND || fleet.ErrorCode(err) == fleet.EINVALID:
			data.DidYouMean = fleet.ErrorMessage(err)
		default:
			d.fail(w, r, ss, err)
			return
		}
	}
	d.render(w, r, "skills", ss, page{Title: "Skills", Nav: "skills", Watch: "skill/ device/", Data: data})
}

// publish takes an uploaded skill archive (.tar.gz) to PublishSkill, as
// POST /v1/skills does with a request body.
func (d *Dashboard) publish(w http.ResponseWriter, r *http.Request, ss session) {
	f, _, err := r.FormFile("archive")
	if err != nil {
		d.fail(w, r, ss, fleet.Errorf(fleet.EINVALID, "archive: choose a skill archive (.tar.gz) to upload"))
		return
	}
	defer f.Close()
	v, err := d.cfg.Fleet.PublishSkill(r.Context(), actor, f)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/skills/"+url.PathEscape(v.SkillID), http.StatusSeeOther)
}

type skillData struct {
	Latest    *fleet.SkillVersion
	Versions  []*fleet.SkillVersion
	Installs  []install      // the first installsLimit, those not loaded first
	States    map[string]int // devices reporting it, by state
	Installed int
	Behind    int
}

// installsLimit caps the skill page's table; the device list filtered by
// the skill has them all.
const installsLimit = 100

func (d *Dashboard) skill(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	if err := d.view.ready(ctx); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	latest, all, err := d.cfg.Fleet.GetSkill(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := skillData{Latest: latest, Versions: all, Behind: len(d.view.behind(latest.SkillID, latest.Version))}
	data.Installs, data.States = d.view.installs(latest.SkillID, installsLimit)
	for _, n := range data.States {
		data.Installed += n
	}
	d.render(w, r, "skill", ss, page{Title: latest.SkillID, Nav: "skills", Watch: "skill/ device/", Data: data})
}

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
	if raw := strings.TrimSpace(form.Get("timeout")); raw != "" {
		t, err := time.ParseDuration(raw)
		if err != nil {
			return nil, fleet.Errorf(fleet.EINVALID, "timeout %q: want a duration such as 10m", raw)
		}
		ro.Timeout = t
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

// why is an execution's reason; a queued or in-progress one whose device
// is offline says since when (the time is shown in the browser's zone).
func (d *Dashboard) why(e *fleet.Execution) (string, time.Time) {
	if e.Reason != "" {
		return e.Reason, time.Time{}
	}
	if e.State != fleet.ExecQueued && e.State != fleet.ExecInProgress {
		return "", time.Time{}
	}
	online, r := d.view.presence(e.DeviceID)
	switch {
	case r == nil || online:
		return "", time.Time{}
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

type auditData struct {
	Filter  fleet.AuditFilter
	Entries []*fleet.AuditEntry
	Older   string
}

func (d *Dashboard) audit(w http.ResponseWriter, r *http.Request, ss session) {
	q := r.URL.Query()
	f := fleet.AuditFilter{Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")), Subject: strings.TrimSpace(q.Get("subject"))}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			d.fail(w, r, ss, fleet.Errorf(fleet.EINVALID, "before %q: want an entry id", b))
			return
		}
		f.BeforeID = n
	}
	es, err := d.cfg.Fleet.ListAudit(r.Context(), f, auditLimit)
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := auditData{Filter: f, Entries: es}
	if len(es) == auditLimit {
		v := url.Values{}
		for k, x := range map[string]string{"actor": f.Actor, "action": f.Action, "subject": f.Subject} {
			if x != "" {
				v.Set(k, x)
			}
		}
		v.Set("before", itoa64(es[len(es)-1].ID))
		data.Older = "/audit?" + v.Encode()
	}
	d.render(w, r, "audit", ss, page{Title: "Audit log", Nav: "audit", Data: data})
}
