package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/installer"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// ServiceName is the agent's installer name in OVOS-INSTALL-1 requests
// (data.service_name) and in the pre-spec suffixed topics.
const ServiceName = "chorus_agent"

// The rest of the OVOS-INSTALL-1 error vocabulary (SKILL_MANAGER §10);
// installer.ErrorURL and installer.ErrorInstall are the other two.
const (
	ErrorDisabled   = "pip disabled in mycroft.conf"
	ErrorNoPackages = "no packages to install"
)

// Bounds of one install request.
const (
	installWait     = 2 * time.Minute // from the request to the desired version applied
	installInFlight = 8               // requests served at once; more are answered failed
	replyTimeout    = 10 * time.Second
)

// installTypes maps the request types the agent answers to the action it
// asks of the gateway (SKILL_MANAGER §10: ovos.skills.* takes the same payload).
var installTypes = map[string]string{
	"ovos.pip.install":      "install",
	"ovos.pip.uninstall":    "uninstall",
	"ovos.skills.install":   "install",
	"ovos.skills.uninstall": "uninstall",
}

// installRequests answers install requests on the device bus. A bus
// handler only does the checks that need no I/O and answers them at once;
// an accepted request runs on its own goroutine (the gateway call, then the
// wait for the installer), so a request waiting for its skill delays
// neither later requests of its type nor any other handler. stop cancels
// those goroutines and waits for them.
type installRequests struct {
	a     *Agent
	gw    *gatewayClient
	wait  time.Duration
	slots chan struct{}

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards closed and offs
	closed bool
	offs   []func()
}

// startInstallRequests subscribes to the request types, each also in its
// pre-spec form suffixed with the service name.
func (a *Agent) startInstallRequests() error {
	ctx, cancel := context.WithCancel(context.Background())
	q := &installRequests{
		a: a, gw: newGatewayClient(a.cfg.ServerURL, a.cfg.Username, a.cfg.Password),
		wait: installWait, slots: make(chan struct{}, installInFlight), ctx: ctx, cancel: cancel,
	}
	a.installs = q
	for base, action := range installTypes {
		for _, t := range []string{base, base + "." + ServiceName} {
			off, err := a.bus.On(t, q.handler(base, action, t != base))
			if err != nil {
				return fmt.Errorf("install requests: %w", err)
			}
			q.mu.Lock()
			q.offs = append(q.offs, off)
			q.mu.Unlock()
		}
	}
	return nil
}

// handler answers one request type. Replies go on the base type even for
// a suffixed request (SKILL_MANAGER §10: MSG-1 reply on the base topic).
func (q *installRequests) handler(base, action string, suffixed bool) bus.Handler {
	return func(ctx context.Context, d bus.Delivery) {
		if suffixed {
			q.a.log.Warn("deprecated install request topic: send the base type with data.service_name",
				"type", d.Message.Type, "base", base)
		}
		if !addressedToUs(d.Message.Data) {
			return // another installer answers (OVOS-INSTALL-1)
		}
		if !q.a.cfg.Skills.Installer.AllowPip {
			q.reply(d, base, failure{ErrorDisabled, ""})
			return
		}
		pkgs, f := packagesOf(d.Message.Data)
		if f != nil {
			q.reply(d, base, *f)
			return
		}
		if !q.spawn(func() { q.serve(d, base, action, pkgs) }) {
			q.reply(d, base, failure{installer.ErrorInstall, "too many install requests in progress, or the agent is stopping"})
		}
	}
}

// addressedToUs: data.service_name absent, or ours.
func addressedToUs(data map[string]any) bool {
	name, present := data["service_name"]
	return !present || name == ServiceName
}

// failure is a .failed reply's data; the zero failure answers .complete.
type failure struct{ err, detail string }

// packagesOf reads data.packages: a list of catalog skill ids, each "id"
// or "id@version". A CORE-A style {"url": ...} request names no catalog
// skill, so it is refused as an unusable URL.
func packagesOf(data map[string]any) ([]string, *failure) {
	raw, ok := data["packages"]
	if !ok || raw == nil {
		if _, hasURL := data["url"]; hasURL {
			return nil, &failure{installer.ErrorURL, "chorus installs catalog skills by id (data.packages), not URLs"}
		}
		return nil, &failure{ErrorNoPackages, ""}
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, &failure{installer.ErrorURL, "data.packages: want a list of skill ids"}
	}
	if len(list) == 0 {
		return nil, &failure{ErrorNoPackages, ""}
	}
	out := make([]string, 0, len(list))
	for _, p := range list {
		s, ok := p.(string)
		if !ok || s == "" {
			return nil, &failure{installer.ErrorURL, fmt.Sprintf("data.packages: %v is not a skill id", p)}
		}
		out = append(out, s)
	}
	return out, nil
}

// spawn runs fn on a goroutine stop waits for, if a slot is free.
func (q *installRequests) spawn(fn func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	select {
	case q.slots <- struct{}{}:
	default:
		return false
	}
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer func() { <-q.slots }()
		fn()
	}()
	return true
}

// serve asks the gateway for the device assignments, waits until the
// installer has applied the desired version that holds them, and answers.
func (q *installRequests) serve(d bus.Delivery, base, action string, pkgs []string) {
	ctx, cancel := context.WithTimeout(q.ctx, q.wait)
	defer cancel()
	log := q.a.log.With("type", d.Message.Type, "packages", pkgs)
	version, err := q.gw.requestSkills(ctx, action, pkgs)
	if err != nil {
		log.Warn("install request refused", "error", err)
		q.reply(d, base, failureOf(err))
		return
	}
	if err := q.a.applied.wait(ctx, version); err != nil {
		switch {
		case q.ctx.Err() != nil:
			err = fmt.Errorf("the agent stopped before desired version %d was applied", version)
		case ctx.Err() != nil:
			err = fmt.Errorf("desired version %d not applied within %s", version, q.wait)
		default:
			err = fmt.Errorf("applying desired version %d: %w", version, err)
		}
		log.Warn("install request failed", "error", err)
		q.reply(d, base, failure{installer.ErrorInstall, err.Error()})
		return
	}
	log.Info("install request complete", "desired_version", version)
	q.reply(d, base, failure{})
}

// failureOf maps a gateway refusal: a skill the catalog does not know, or
// a malformed name, is a validation failure; anything else failed the install.
func failureOf(err error) failure {
	var ge *gatewayError
	if errors.As(err, &ge) && ge.packageProblem() {
		return failure{installer.ErrorURL, ge.Message}
	}
	return failure{installer.ErrorInstall, err.Error()}
}

// reply answers d with <base>.complete {} (f zero) or <base>.failed
// {"error", "detail"}, derived with MSG-1 reply and echoing the
// correlation data. It is bounded on its own: the requester should hear
// even when the request's time ran out.
func (q *installRequests) reply(d bus.Delivery, base string, f failure) {
	t, data := base+".complete", map[string]any{}
	if f.err != "" {
		t, data = base+".failed", map[string]any{"error": f.err, "detail": f.detail}
	}
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	if err := q.a.bus.Reply(ctx, d, d.Message.Reply(t, data)); err != nil {
		q.a.log.Warn("reply to install request", "type", t, "error", err)
	}
}

// stop unsubscribes, cancels the requests in progress and waits for them;
// idempotent.
func (q *installRequests) stop() {
	q.mu.Lock()
	q.closed = true
	offs := q.offs
	q.offs = nil
	q.mu.Unlock()
	for _, off := range offs {
		off()
	}
	q.cancel()
	q.wg.Wait()
}
