package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// page is what every template gets.
type page struct {
	Title   string
	Nav     string // the menu entry to mark current
	CSRF    string
	Version string
	Error   string
	// Watch lists the subject prefixes whose change refreshes the page's
	// live parts ("" = any change).
	Watch   string
	Pending bool // the fleet has an enrolment queue
	Data    any

	status int // 0 = 200
}

var pageNames = []string{"login", "overview", "devices", "device", "skills", "skill", "rollouts", "rollout", "audit", "error", "credentials"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"when":   when,
		"join":   strings.Join,
		"add":    func(a, b int) int { return a + b },
		"target": func(t fleet.Target) string { return t.String() },
		"json":   jsonText,
		"tally":  newTally,
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard templates: %w", err)
		}
		out[name] = t
	}
	return out, nil
}

// tally is a rollout's executions counted for its progress bar.
type tally struct {
	Total, Succeeded, InProgress, Queued, Bad, Canceled int
}

func newTally(m map[fleet.ExecState]int) tally {
	t := tally{Succeeded: m[fleet.ExecSucceeded], InProgress: m[fleet.ExecInProgress], Queued: m[fleet.ExecQueued],
		Bad: m[fleet.ExecFailed] + m[fleet.ExecTimedOut], Canceled: m[fleet.ExecCanceled]}
	t.Total = t.Succeeded + t.InProgress + t.Queued + t.Bad + t.Canceled
	return t
}

// when renders a time for the browser to show in its own zone (app.js
// rewrites the text); the text is UTC until then.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "never"
	}
	u := t.UTC()
	return template.HTML(`<time datetime="` + u.Format(time.RFC3339) + `">` + u.Format("2006-01-02 15:04:05") + ` UTC</time>`)
}

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// render writes a page; a template failure is a 500 with nothing half-sent.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, name string, ss session, p page) {
	p.CSRF, p.Version, p.Pending = ss.csrf, d.cfg.Version, d.cfg.Enrolments != nil
	var buf bytes.Buffer
	if err := d.pages[name].Execute(&buf, p); err != nil {
		d.log.Error("dashboard: render", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	_, _ = w.Write(buf.Bytes())
}

// statusOf maps the fleet's error codes as the HTTP API does.
var statusOf = map[string]int{
	fleet.EINVALID:     http.StatusBadRequest,
	fleet.ENOTFOUND:    http.StatusNotFound,
	fleet.ECONFLICT:    http.StatusConflict,
	fleet.EUNAVAILABLE: http.StatusServiceUnavailable,
}

// fail shows err on the error page with the API's status for its code;
// an internal error is logged and its details withheld.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, ss session, err error) {
	status, ok := statusOf[fleet.ErrorCode(err)]
	msg := fleet.ErrorMessage(err)
	if !ok {
		status, msg = http.StatusInternalServerError, "internal error: see the gateway's log"
		d.log.Error("dashboard request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	d.render(w, r, "error", ss, page{Title: http.StatusText(status), Error: msg, status: status})
}

func (d *Dashboard) notFound(w http.ResponseWriter, r *http.Request, ss session) {
	d.fail(w, r, ss, fleet.Errorf(fleet.ENOTFOUND, "no such page: %s", r.URL.Path))
}
