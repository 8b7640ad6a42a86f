package agent

import (
	"context"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/installer"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// desiredRunner applies the retained desired document with the installer.
// One goroutine owns the applying: deliveries only record the latest
// document and wake it, so a burst of documents collapses into one pass on
// the newest. A pass that fails is retried with backoff; the reconcile is
// level-based, so a retry simply applies the latest document again.
type desiredRunner struct {
	a    *Agent
	inst *installer.Installer

	mu     sync.Mutex
	latest *desired.Doc

	wake   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const (
	retryMin = 5 * time.Second
	retryMax = 5 * time.Minute
)

func (a *Agent) startInstaller(ctx context.Context) error {
	inst, err := installer.New(installer.Config{
		Device: a.cfg.Device, ServerURL: a.cfg.ServerURL, Username: a.cfg.Username, Password: a.cfg.Password,
		InstalledRoot: a.installedRoot(), SettingsRoot: a.cfg.Skills.SettingsRoot, Bus: a.bus,
		OnApplied: a.recordApplied, Prepare: a.prepareOVOS, Logger: a.log.With("component", "installer"),
	})
	if err != nil {
		return err
	}
	if err := inst.CleanStaging(ctx); err != nil {
		a.log.Warn("clean staging", "error", err)
	}
	if v, ok := inst.Applied(); ok {
		a.recordApplied(v, inst.Managed())
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &desiredRunner{a: a, inst: inst, wake: make(chan struct{}, 1), cancel: cancel}
	r.wg.Add(1)
	go r.run(runCtx)
	a.desired = r
	t, err := topic.Desired(a.cfg.Device)
	if err != nil {
		return err
	}
	_, err = a.mqtt.Subscribe(ctx, t, r.deliver)
	return err
}

// deliver records a desired document; a malformed one changes nothing.
func (r *desiredRunner) deliver(p bus.Packet) {
	if len(p.Payload) == 0 {
		return // cleared: the device is being removed; keep what is installed
	}
	doc, err := desired.Parse(p.Payload)
	if err != nil {
		r.a.log.Error("desired document refused; nothing changed", "error", err)
		return
	}
	r.mu.Lock()
	r.latest = &doc
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *desiredRunner) run(ctx context.Context) {
	defer r.wg.Done()
	delay := retryMin
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-retry:
		}
		r.mu.Lock()
		doc := r.latest
		r.mu.Unlock()
		if doc == nil {
			continue
		}
		if err := r.inst.Apply(ctx, *doc); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.a.log.Warn("apply desired document; will retry", "version", doc.Version, "retry_in", delay, "error", err)
			r.a.applied.failed(doc.Version, err)
			retry = time.After(delay)
			delay = min(2*delay, retryMax)
			continue
		}
		retry, delay = nil, retryMin
	}
}

// stop cancels a running pass and waits for the goroutine.
func (r *desiredRunner) stop() {
	r.cancel()
	r.wg.Wait()
}
