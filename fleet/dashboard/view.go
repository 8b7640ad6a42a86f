package dashboard

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/gateway/state"
)

// parseReported reads the skills of a device's stored report
// (gateway/state); the controller validated it when storing.
func parseReported(raw json.RawMessage) []state.Skill {
	rep, _ := state.ParseSkills(raw)
	return rep.Skills
}

// row is one device as the lists show it: the API's view of it (counts and
// drift computed by api.NewDevice, as GET /v1/devices has them) and the
// skills it reports, reduced to what the lists read.
type row struct {
	api.Device
	Skills []listedSkill
	failed int // skills failed or invalid
}

// listedSkill is what the lists read of one reported skill: gateway/state.Skill
// without its output lines, requirements and timings, which only a device's
// own page shows (it reads them from the store).
type listedSkill struct {
	ID, Version string
	State       state.SkillState
	Error       string
}

func (s listedSkill) failed() bool { return s.State == state.Failed || s.State == state.Invalid }

// newRow makes d's row. A compact row, the view's, drops the connectivity
// document (only a device's own page shows it) and holds the strings most
// devices share (skill ids, versions and states, tags, the agent version)
// once, through unique: the handles are weak, so a name no row uses any
// more is collected.
func newRow(d *fleet.Device, want fleet.Desired, compact bool) *row {
	in := func(s string) string { return s }
	if compact {
		in = intern
	}
	r := &row{Device: api.NewDevice(d, want)}
	rep := parseReported(d.Reported)
	r.Skills = make([]listedSkill, len(rep))
	for i, s := range rep {
		r.Skills[i] = listedSkill{ID: in(s.ID), Version: in(s.Version), State: state.SkillState(in(string(s.State))), Error: s.Error}
		if r.Skills[i].failed() {
			r.failed++
		}
	}
	if compact {
		r.Connectivity = nil
		r.AgentVersion = in(r.AgentVersion)
		for i, t := range r.Tags {
			r.Tags[i] = in(t)
		}
	}
	return r
}

func intern(s string) string { return unique.Make(s).Value() }

// Reason says why the device needs attention, "" when it does not.
func (r *row) Reason() string {
	switch {
	case r.failed > 0:
		s := r.Skills[slices.IndexFunc(r.Skills, listedSkill.failed)]
		msg := "skill " + s.ID + " " + string(s.State)
		if s.Error != "" {
			msg += ": " + s.Error
		}
		if r.failed > 1 {
			msg += " (and " + itoa(r.failed-1) + " more)"
		}
		return msg
	case !r.Online && r.LastSeen.IsZero():
		return "never connected"
	case !r.Online:
		return "offline"
	case r.Drift:
		return "drifting: has not applied its desired skills (version " + itoa64(r.AppliedVersion) + " of " + itoa64(r.DesiredVersion) + ")"
	}
	return ""
}

// rank orders the devices needing attention: failed skills, then offline,
// then drifting.
func (r *row) rank() int {
	switch {
	case r.failed > 0:
		return 0
	case !r.Online:
		return 1
	case r.Drift:
		return 2
	}
	return 3
}

// view is the dashboard's copy of the device list, kept current by the
// change feed while the dashboard is in use (one goroutine writes it:
// Dashboard.follow); the pages read it under the read lock. It is built
// from Fleet's ListDevices and DesiredOf, the calls GET /v1/devices makes.
//
// While nobody uses the dashboard (no open event stream and no page read
// within idleAfter) follow drops the rows and the feed: a gateway whose
// dashboard is closed spends nothing on it during a rollout
// (docs/dashboard.md "Live updates"). The next reader's ready loads it again.
type view struct {
	fleet Fleet
	log   *slog.Logger
	now   func() time.Time

	want chan struct{} // cap 1: a reader asks follow to load the view
	used atomic.Int64  // when a reader last called ready (UnixNano)

	mu       sync.RWMutex // guards the fields below
	rows     map[string]*row
	ids      []string      // sorted
	current  bool          // loaded, and the feed keeps the rows current
	err      error         // the last load's failure
	loadDone chan struct{} // closed, then replaced, when a load ends
}

// idleAfter is how long the view stays current after the last page read
// when no event stream is open.
const idleAfter = time.Minute

func newView(f Fleet, log *slog.Logger, now func() time.Time) *view {
	return &view{fleet: f, log: log, now: now, want: make(chan struct{}, 1),
		rows: map[string]*row{}, loadDone: make(chan struct{})}
}

// ready marks the view in use and waits until it is current, asking follow
// to load it when it is not (the first read after the dashboard was idle).
func (v *view) ready(ctx context.Context) error {
	v.used.Store(v.now().UnixNano())
	for {
		v.mu.RLock()
		current, err, done := v.current, v.err, v.loadDone
		v.mu.RUnlock()
		if current {
			return nil
		}
		select {
		case v.want <- struct{}{}:
		default:
		}
		select {
		case <-done:
			v.mu.RLock()
			current, err = v.current, v.err
			v.mu.RUnlock()
			if !current && err != nil {
				return err
			}
		case <-ctx.Done():
			if err != nil {
				return err
			}
			return ctx.Err()
		}
	}
}

// load reads every device again; the view is current when it succeeds.
func (v *view) load(ctx context.Context) {
	ds, err := v.fleet.ListDevices(ctx, fleet.DeviceFilter{})
	rows := make(map[string]*row, len(ds))
	for _, d := range ds {
		if err != nil {
			break
		}
		var want fleet.Desired
		if want, err = v.fleet.DesiredOf(ctx, d.ID); err == nil {
			rows[d.ID] = newRow(d, want, true)
		} else if fleet.ErrorCode(err) == fleet.ENOTFOUND {
			err = nil // removed meanwhile
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	defer func() { close(v.loadDone); v.loadDone = make(chan struct{}) }()
	if err != nil {
		if ctx.Err() == nil {
			v.log.Error("dashboard: load the devices", "error", err)
		}
		v.current, v.err = false, err
		return
	}
	v.rows, v.current, v.err = rows, true, nil
	v.sort()
}

// dropIfIdle forgets the rows when no reader called ready within idleAfter
// and no event stream is open (streams > 0). It decides under the write
// lock, after which a reader's ready sees the view not current and asks
// for a load: a page never renders a dropped view.
func (v *view) dropIfIdle(streams int) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if streams > 0 || v.now().Sub(time.Unix(0, v.used.Load())) < idleAfter {
		return false
	}
	v.rows, v.ids, v.current, v.err = map[string]*row{}, nil, false, nil
	return true
}

func (v *view) sort() {
	v.ids = v.ids[:0]
	for id := range v.rows {
		v.ids = append(v.ids, id)
	}
	slices.Sort(v.ids)
}

// failed reports whether the last load failed (the next batch of changes,
// or the next reader, loads everything again).
func (v *view) failed() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.err != nil
}

// apply reads again each device the subjects name ("device/<id>").
func (v *view) apply(ctx context.Context, subjects []string) {
	for _, s := range subjects {
		id, ok := strings.CutPrefix(s, "device/")
		if !ok || strings.Contains(id, "/") {
			continue
		}
		v.refresh(ctx, id)
	}
}

func (v *view) refresh(ctx context.Context, id string) {
	d, err := v.fleet.GetDevice(ctx, id)
	var want fleet.Desired
	if err == nil {
		want, err = v.fleet.DesiredOf(ctx, id)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case fleet.ErrorCode(err) == fleet.ENOTFOUND:
		if _, ok := v.rows[id]; ok {
			delete(v.rows, id)
			v.sort()
		}
	case err != nil:
		if ctx.Err() == nil {
			v.log.Warn("dashboard: read a device", "device", id, "error", err)
		}
	default:
		_, had := v.rows[id]
		v.rows[id] = newRow(d, want, true)
		if !had {
			v.sort()
		}
	}
}

// counts is the overview's numbers.
type counts struct {
	Devices, Online, Offline, Drifting, FailedSkills, Attention int
}

func (v *view) counts() counts {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var c counts
	for _, r := range v.rows {
		c.Devices++
		if r.Online {
			c.Online++
		} else {
			c.Offline++
		}
		if r.Drift {
			c.Drifting++
		}
		c.FailedSkills += r.failed
		if r.rank() < 3 {
			c.Attention++
		}
	}
	return c
}

// attention returns at most limit devices needing attention, worst first.
func (v *view) attention(limit int) []*row {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []*row
	for _, id := range v.ids {
		if r := v.rows[id]; r.rank() < 3 {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *row) int { return a.rank() - b.rank() })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// deviceFilter narrows the device list.
type deviceFilter struct {
	Q     string // part of the id
	Tag   string
	State string // "", online, offline, drift, failed, attention
	Skill string // has this skill (reported)
}

func (f deviceFilter) match(r *row) bool {
	if f.Q != "" && !strings.Contains(r.ID, f.Q) {
		return false
	}
	if f.Tag != "" && !slices.Contains(r.Tags, f.Tag) {
		return false
	}
	if f.Skill != "" && !slices.ContainsFunc(r.Skills, func(s listedSkill) bool { return s.ID == f.Skill }) {
		return false
	}
	switch f.State {
	case "online":
		return r.Online
	case "offline":
		return !r.Online
	case "drift":
		return r.Drift
	case "failed":
		return r.failed > 0
	case "attention":
		return r.rank() < 3
	}
	return true
}

// list returns the page'th page (from 0) of size devices f matches, by id,
// and how many match.
func (v *view) list(f deviceFilter, page, size int) ([]*row, int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []*row
	total := 0
	for _, id := range v.ids {
		r := v.rows[id]
		if !f.match(r) {
			continue
		}
		if total >= page*size && total < (page+1)*size {
			out = append(out, r)
		}
		total++
	}
	return out, total
}

func (v *view) get(id string) (*row, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	r, ok := v.rows[id]
	return r, ok
}

// tags lists every tag in use.
func (v *view) tags() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	seen := map[string]bool{}
	for _, r := range v.rows {
		for _, t := range r.Tags {
			seen[t] = true
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// install is one device's copy of a skill.
type install struct {
	Device  string
	Online  bool
	Version string
	State   string
	Error   string
}

// installs lists the first limit devices that report skill, by id, not
// loaded first; with how many report it in each state.
func (v *view) installs(skill string, limit int) ([]install, map[string]int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var bad, good []install
	states := map[string]int{}
	for _, id := range v.ids {
		r := v.rows[id]
		for _, s := range r.Skills {
			if s.ID != skill {
				continue
			}
			states[string(s.State)]++
			in := install{Device: id, Online: r.Online, Version: s.Version, State: string(s.State), Error: s.Error}
			switch {
			case s.State != state.Loaded && len(bad) < limit:
				bad = append(bad, in)
			case s.State == "loaded" && len(good) < limit:
				good = append(good, in)
			}
		}
	}
	out := append(bad, good...)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, states
}

// installCounts counts each skill's devices.
func (v *view) installCounts() map[string]int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := map[string]int{}
	for _, r := range v.rows {
		for _, s := range r.Skills {
			out[s.ID]++
		}
	}
	return out
}

// behind lists the devices that do not report skill at version (in any
// state: one that has it and failed is not helped by installing it again):
// "update all" installs it there.
func (v *view) behind(skill, version string) []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []string
	for _, id := range v.ids {
		r := v.rows[id]
		if !slices.ContainsFunc(r.Skills, func(s listedSkill) bool {
			return s.ID == skill && s.Version == version
		}) {
			out = append(out, id)
		}
	}
	return out
}

// onlineOf reports each device's presence, for the rollout page's reasons.
func (v *view) presence(id string) (online bool, r *row) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	r, ok := v.rows[id]
	return ok && r.Online, r
}
