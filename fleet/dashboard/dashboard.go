// Package dashboard is the operator's web console on the gateway's HTTP
// server (docs/dashboard.md): server-rendered pages (html/template) with
// a little hand-written JavaScript, built into the binary with embed, no
// CDN and no Node. Live updates come over Server-Sent Events fed by the
// controller's change feed; the device pages read an in-memory view the
// same feed keeps current, so an open tab costs no database poll.
//
// Every read and every action goes through Fleet, the same controller calls
// the HTTP API makes: there is no second path to the store.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// actor is the audit log's name for what the dashboard does: the operator
// signed in with the operator token, as on the HTTP API.
const actor = "operator"

// Fleet is what the dashboard needs of the fleet controller: the calls of
// the HTTP API (fleet/httpapi.Fleet), no others.
type Fleet interface {
	ListDevices(ctx context.Context, f fleet.DeviceFilter) ([]*fleet.Device, error)
	GetDevice(ctx context.Context, id string) (*fleet.Device, error)
	DesiredOf(ctx context.Context, id string) (fleet.Desired, error)
	RemoveDevice(ctx context.Context, actor, id string) error
	SetTags(ctx context.Context, actor, id string, tags []string) (*fleet.Device, error)
	RotateDevice(ctx context.Context, actor, id string) (*fleet.Device, configs.AgentCredentials, error)

	PublishSkill(ctx context.Context, actor string, archive io.Reader) (*fleet.SkillVersion, error)
	ListSkills(ctx context.Context) ([]*fleet.SkillVersion, error)
	GetSkill(ctx context.Context, id string) (*fleet.SkillVersion, []*fleet.SkillVersion, error)
	Search(ctx context.Context, query string, limit int) ([]*fleet.SkillVersion, []float64, error)
	Resolve(ctx context.Context, query string) (*fleet.SkillVersion, error)

	CreateRollout(ctx context.Context, actor string, r *fleet.Rollout) (*fleet.Rollout, error)
	ListRollouts(ctx context.Context, f fleet.RolloutFilter) ([]*fleet.Rollout, error)
	GetRollout(ctx context.Context, id int64) (*fleet.Rollout, []*fleet.Execution, error)
	PauseRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error)
	ResumeRollout(ctx context.Context, actor string, id int64) (*fleet.Rollout, error)
	AbortRollout(ctx context.Context, actor string, id int64, rollback bool) (*fleet.Rollout, error)

	ListAudit(ctx context.Context, f fleet.AuditFilter, limit int) ([]*fleet.AuditEntry, error)
}

// Feed is a subscription to the controller's changes
// (controller.Changes): Wake is readable when some are pending, Take
// returns the changed subjects ("device/<id>", "rollout/<id>", ...), or
// all when the subscriber must assume everything changed.
type Feed interface {
	Wake() <-chan struct{}
	Take() (subjects []string, all bool)
}

// Birth is what a device's latest birth said beyond the registry
// (controller.BirthInfo).
type Birth struct {
	Hostname, Arch, Isolation string
}

// Enrolments is the fleet's queue of devices asking to join. Nil hides
// the pending count, list and accept/reject actions (docs/dashboard.md).
type Enrolments interface {
	ListPending(ctx context.Context) ([]Pending, error)
	Accept(ctx context.Context, actor, id string) error
	Reject(ctx context.Context, actor, id string) error
}

// Pending is one device waiting for an operator's accept or reject.
type Pending struct {
	ID        string // the pending enrolment's id
	Device    string // the device id it asks for
	Address   string
	Requested time.Time
	Accepted  bool // accepted; waits for its agent to collect its credentials
}

// Config configures a Dashboard. Fleet and Subscribe are required.
type Config struct {
	Fleet Fleet
	// Subscribe starts a change feed and returns the function that ends it.
	Subscribe func() (Feed, func())
	// Birth returns a device's latest birth details; nil shows none.
	Birth func(id string) (Birth, bool)
	// Enrolments, when set, shows the devices waiting to join; nil hides them.
	Enrolments Enrolments
	// Token is the operator token one signs in with (the API's bearer
	// token); empty refuses every sign-in.
	Token string
	// Secure marks the session cookie Secure (the server runs TLS).
	Secure  bool
	Version string
	Logger  *slog.Logger
	// Now is the clock of sessions (time.Now).
	Now func() time.Time
}

// Dashboard is the console's http.Handler with its background view.
type Dashboard struct {
	cfg   Config
	log   *slog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux
	auth  *sessions
	view  *view
	hub   *hub

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// New starts the goroutine that keeps the dashboard's view of the fleet;
// the view is loaded, and the change feed subscribed, when a page first
// needs it. Close stops them.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Fleet == nil || cfg.Subscribe == nil {
		return nil, errors.New("dashboard: Fleet and Subscribe are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, pages: pages, auth: newSessions(cfg.Token, cfg.Now)}
	d.view = newView(cfg.Fleet, cfg.Logger, cfg.Now)
	d.hub = newHub()
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.follow(ctx)
	}()
	d.mux = d.routes()
	return d, nil
}

// follow is the one goroutine that owns the view's updates. It waits until
// a reader wants the view, subscribes to the change feed, loads the view,
// and keeps it current until the dashboard is idle; then it ends the
// subscription and drops the view, and waits again.
func (d *Dashboard) follow(ctx context.Context) {
	defer d.hub.close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.view.want:
		}
		// Subscribe before loading: a change made during the load is
		// applied after it, none is lost.
		feed, unsubscribe := d.cfg.Subscribe()
		d.view.load(ctx)
		d.keepCurrent(ctx, feed)
		unsubscribe()
	}
}

// keepCurrent applies each batch of changes to the view and tells the open
// pages, until ctx ends or the view was dropped as idle.
func (d *Dashboard) keepCurrent(ctx context.Context, feed Feed) {
	idle := time.NewTicker(idleCheck)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			if d.view.dropIfIdle(d.hub.open()) {
				return
			}
			continue
		case <-d.view.want: // a reader after a failed load
			if d.view.failed() {
				d.view.load(ctx)
			}
			continue
		case <-feed.Wake():
		}
		subjects, all := feed.Take()
		if all || d.view.failed() {
			d.view.load(ctx)
		} else {
			d.view.apply(ctx, subjects)
		}
		d.hub.publish(subjects, all)
		select { // pace: what changes meanwhile is read once, in the next batch
		case <-ctx.Done():
		case <-time.After(viewGap):
		}
	}
}

// idleCheck is how often keepCurrent asks whether the view is idle.
const idleCheck = 10 * time.Second

// viewGap is the least time between two batches the view applies: a device
// that changes many times a second (a rollout's desired document, then its
// reports) is read once per gap, which bounds what a large rollout costs
// the dashboard.
const viewGap = 500 * time.Millisecond

// Close stops the view and ends the open event streams.
func (d *Dashboard) Close() error {
	d.once.Do(func() {
		d.cancel()
		d.wg.Wait()
	})
	return nil
}

// ServeHTTP serves the pages.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'")
	d.mux.ServeHTTP(w, r)
}

func (d *Dashboard) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	mux.HandleFunc("GET /login", d.loginPage)
	mux.HandleFunc("POST /login", d.login)
	mux.HandleFunc("POST /logout", d.signedIn(d.logout))

	mux.HandleFunc("GET /{$}", d.signedIn(d.overview))
	mux.HandleFunc("GET /events", d.signedIn(d.events))
	mux.HandleFunc("GET /devices", d.signedIn(d.devices))
	mux.HandleFunc("GET /devices/{id}", d.signedIn(d.device))
	mux.HandleFunc("POST /devices/{id}/tags", d.signedIn(d.setTags))
	mux.HandleFunc("POST /devices/{id}/rotate", d.signedIn(d.rotate))
	mux.HandleFunc("POST /devices/{id}/remove", d.signedIn(d.remove))
	mux.HandleFunc("POST /devices/{id}/skill", d.signedIn(d.toggleSkill))
	mux.HandleFunc("POST /enrolments/{id}/{verdict}", d.signedIn(d.enrolment))

	mux.HandleFunc("GET /skills", d.signedIn(d.skills))
	mux.HandleFunc("POST /skills", d.signedIn(d.publish))
	mux.HandleFunc("GET /skills/{id}", d.signedIn(d.skill))

	mux.HandleFunc("GET /rollouts", d.signedIn(d.rollouts))
	mux.HandleFunc("POST /rollouts", d.signedIn(d.createRollout))
	mux.HandleFunc("POST /rollouts/update-all", d.signedIn(d.updateAll))
	mux.HandleFunc("GET /rollouts/{id}", d.signedIn(d.rollout))
	mux.HandleFunc("POST /rollouts/{id}/{action}", d.signedIn(d.rolloutAction))

	mux.HandleFunc("GET /audit", d.signedIn(d.audit))
	mux.HandleFunc("/", d.signedIn(d.notFound))
	return mux
}

// staticHandler serves the embedded assets; they change only with the
// binary, which the version query string in the pages names.
func staticHandler(fsys fs.FS) http.Handler {
	h := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
