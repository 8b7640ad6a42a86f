// Package mosquittosync keeps the clients, roles and groups of Mosquitto 2's
// dynamic-security plugin in step with the fleet registry, over the plugin's
// control topic (docs/security.md, "Mosquitto dynamic-security, live"), so a
// gateway on an external Mosquitto needs no export and restart when devices,
// credentials, skills or grants change.
//
// The plugin takes plaintext passwords only, and the registry keeps hashes.
// So the sync sets a password when it knows it: a skill's derived password
// (computed from the stored hash), a local account's (on disk), or a secret
// handed over by SetSecret while the controller still holds it (device add
// and rotate, integration and operator add). Each client's textname records
// the fingerprint of the secret its password was made from; a client whose
// secret was rotated without the new one reaching the sync is deleted, so an
// old secret never outlives its rotation.
package mosquittosync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
)

// Config configures a Syncer. Transport and Desired are required; every
// other zero field takes a default.
type Config struct {
	// Transport is connected to Mosquitto as an account allowed to publish
	// to ControlTopic and to subscribe to ResponseTopic.
	Transport bus.Transport
	// Desired lists the accounts the plugin should hold. It runs on the
	// sync's goroutine, never the caller's.
	Desired func(ctx context.Context) ([]Client, error)
	// Self is the sync's own username: never created, changed or deleted.
	Self string
	// TriggerTopics are filters whose messages mean the desired set may have
	// changed (the devices' desired documents and reported skills).
	TriggerTopics []string
	Logger        *slog.Logger

	Debounce time.Duration // wait after a trigger for more (250ms)
	Resync   time.Duration // reconcile at least this often (1m)
	Timeout  time.Duration // one request and its answer (10s)
	Attempts int           // tries of one reconcile before waiting for the next trigger (5)
	Batch    int           // commands per request (100)
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Debounce <= 0 {
		c.Debounce = 250 * time.Millisecond
	}
	if c.Resync <= 0 {
		c.Resync = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Attempts <= 0 {
		c.Attempts = 5
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
}

// Syncer is the running sync. One goroutine reconciles; Trigger and
// SetSecret only record and wake it, so they never block their caller.
type Syncer struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	resp chan []byte

	urgent  atomic.Bool // the next kick skips the debounce (Await)
	healthy atomic.Bool // the last reconcile succeeded, or none ran yet (Healthy)

	mu      sync.Mutex        // guards the fields below; never held across I/O
	secrets map[string]secret // username -> plaintext handed over, until pushed
	ready   map[string]bool   // usernames the plugin held, current, after the last reconcile
	passed  chan struct{}     // closed when a reconcile ends, then replaced

	seq    uint64            // request number (sync goroutine only)
	warned map[string]string // username -> fingerprint warned about (sync goroutine only)

	ctx    context.Context
	cancel context.CancelFunc
	unsubs []func()
	wg     sync.WaitGroup
	once   sync.Once
}

type secret struct{ fp, password string }

// New checks cfg and returns a Syncer that does nothing until Start.
func New(cfg Config) (*Syncer, error) {
	if cfg.Transport == nil || cfg.Desired == nil {
		return nil, errors.New("mosquitto sync: Transport and Desired are required")
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Syncer{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), resp: make(chan []byte, 8),
		secrets: map[string]secret{}, ready: map[string]bool{}, passed: make(chan struct{}),
		warned: map[string]string{}, ctx: ctx, cancel: cancel}
	s.healthy.Store(true)
	return s, nil
}

// Start subscribes to the plugin's answers and the trigger topics and starts
// the goroutine, which reconciles at once.
func (s *Syncer) Start(ctx context.Context) error {
	un, err := s.cfg.Transport.Subscribe(ctx, ResponseTopic, func(p bus.Packet) {
		select {
		case s.resp <- p.Payload:
		default: // nobody waits for that many answers: a stale one
		}
	})
	if err != nil {
		return fmt.Errorf("mosquitto sync: subscribe %s: %w", ResponseTopic, err)
	}
	s.unsubs = append(s.unsubs, un)
	for _, f := range s.cfg.TriggerTopics {
		un, err := s.cfg.Transport.Subscribe(ctx, f, func(bus.Packet) { s.Trigger() })
		if err != nil {
			s.Close()
			return fmt.Errorf("mosquitto sync: subscribe %s: %w", f, err)
		}
		s.unsubs = append(s.unsubs, un)
	}
	s.Trigger()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.run() }()
	return nil
}

// Trigger asks for a reconcile soon (after Debounce); it never blocks.
func (s *Syncer) Trigger() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// SetSecret hands over the plaintext of username's new secret, whose
// fingerprint is fp (mosquittoexport.AccountFingerprint), while the caller
// still has it. The sync keeps it in memory until the plugin has it, or a
// newer secret or the account's removal supersedes it.
func (s *Syncer) SetSecret(username, fp, password string) {
	s.mu.Lock()
	s.secrets[username] = secret{fp: fp, password: password}
	s.mu.Unlock()
	s.Trigger()
}

// Healthy reports whether the last reconcile succeeded; true before the
// first. It turns false as soon as one try fails, before any retry.
func (s *Syncer) Healthy() bool { return s.healthy.Load() }

// Await returns true once the plugin holds every one of usernames with its
// current password, asking for a reconcile without the debounce when it does
// not. It returns false instead of waiting while the sync is not Healthy
// (the next try comes after a back-off of a second or more), and when ctx
// ends or the Syncer closes first. The gateway awaits a device's skill
// clients before publishing a desired document that installs them, so a
// skill never starts before it can log in.
func (s *Syncer) Await(ctx context.Context, usernames ...string) bool {
	for {
		s.mu.Lock()
		all := true
		for _, u := range usernames {
			all = all && s.ready[u]
		}
		passed := s.passed
		s.mu.Unlock()
		if all {
			return true
		}
		if !s.Healthy() {
			return false
		}
		s.urgent.Store(true)
		s.Trigger()
		select {
		case <-passed:
		case <-ctx.Done():
			return false
		case <-s.ctx.Done():
			return false
		}
	}
}

// Close stops the goroutine and waits for it; it is idempotent.
func (s *Syncer) Close() {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
		for _, un := range s.unsubs {
			un()
		}
	})
}

func (s *Syncer) run() {
	resync := time.NewTicker(s.cfg.Resync)
	defer resync.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-resync.C:
		case <-s.kick:
			if !s.urgent.Swap(false) && !s.sleep(s.cfg.Debounce) {
				return
			}
		}
		s.reconcileRetrying()
	}
}

// reconcileRetrying reconciles, backing off between at most cfg.Attempts
// tries; after the last, the next trigger or resync tries again.
func (s *Syncer) reconcileRetrying() {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		err := s.reconcile()
		s.healthy.Store(err == nil) // before pass: a woken Await sees it
		s.pass()
		if err == nil {
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		if attempt == s.cfg.Attempts {
			s.log.Error("mosquitto dynamic-security sync failed; retrying at the next change or resync",
				"attempts", attempt, "error", err)
			return
		}
		s.log.Warn("mosquitto dynamic-security sync failed; retrying", "attempt", attempt, "in", backoff, "error", err)
		if !s.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// pass wakes the Await callers after a reconcile.
func (s *Syncer) pass() {
	s.mu.Lock()
	close(s.passed)
	s.passed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Syncer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
