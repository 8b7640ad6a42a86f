package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
)

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
