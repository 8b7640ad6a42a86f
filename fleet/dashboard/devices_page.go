package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

type devicesData struct {
	Filter      deviceFilter
	Rows        []*row
	Total       int
	Page, Pages int
	Tags        []string
	Prev, Next  string // links to the neighbouring pages, "" at an end
	States      []string
	Skills      []*fleet.SkillVersion // the catalog, offered in the skill filter
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
	skills, err := d.cfg.Fleet.ListSkills(r.Context())
	if err != nil {
		d.fail(w, r, ss, err)
		return
	}
	data := devicesData{Filter: f, Rows: rows, Total: total, Page: pg, Pages: pages, Tags: d.view.tags(),
		States: []string{"online", "offline", "drift", "failed", "attention"}, Skills: skills}
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
	Output   []string // a failed skill's last output lines, as the agent reported them
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
	row := newRow(dev, want, false)
	data := deviceData{Row: row, TagText: strings.Join(row.Tags, " ")}
	if c, ok := row.ParseConnectivity(); ok {
		data.Connectivity.Network, data.Connectivity.Internet, data.Connectivity.GUI = yesNo(c.Network), yesNo(c.Internet), yesNo(c.GUI)
	} else {
		data.Connectivity.Network, data.Connectivity.Internet, data.Connectivity.GUI = "not reported", "not reported", "not reported"
	}
	if d.cfg.Birth != nil {
		data.Birth, data.HasBirth = d.cfg.Birth(id)
	}
	data.Skills = skillRows(want, parseReported(dev.Reported))
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
func skillRows(want fleet.Desired, reported []state.Skill) []skillRow {
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
		sr.Reported, sr.State, sr.Error, sr.Output = s.Version, string(s.State), s.Error, s.Output
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
