package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
