// Package controller is the fleet controller runtime: it keeps the broker's
// auth table in step with the registry, publishes every device's desired
// document, follows the devices' retained state topics, reconciles each
// device by level and paces rollouts (ARCHITECTURE.md §5).
//
// Goroutines: one inbox goroutine owns the processing of broker messages
// (inline broker handlers only enqueue), Workers reconcile goroutines take
// devices from a deduplicating queue, and one rollout engine goroutine
// starts, times out and finishes executions. All state that matters is in
// the Store, so a controller killed at any point resumes where it was.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// Store is what the controller needs of the fleet database; *sqlite.DB
// satisfies it.
type Store interface {
	fleet.DeviceService
	fleet.CredentialService
	fleet.CatalogService
	fleet.AssignmentService
	fleet.RolloutService
	fleet.AuditService
	fleet.GrantService
	fleet.EnrolService
}

// Broker is what the controller needs of the embedded broker; *broker.Broker
// satisfies it. Publish bypasses the ACL: the controller is the only writer
// of desired documents.
type Broker interface {
	bus.InProcess // Publish and Subscribe, as the embedded broker's in-process client
	SetTable(t *broker.Table)
}

// SkillInfo is what ValidateSkill learns from an unpacked skill archive.
type SkillInfo struct {
	ID           string
	Version      string
	Title        string
	Description  string
	Requirements []string
}

// Config configures a Controller. Store and Broker are required; every other
// zero field takes a default.
type Config struct {
	Store  Store
	Broker Broker
	// LocalAccounts are always in the broker's auth table (localauth). A
	// registry account with the same username shadows a local one.
	LocalAccounts []broker.Account
	// ArtifactDir holds the published archives, named by their sha256.
	ArtifactDir string
	// ValidateSkill checks an unpacked archive with the agent's discovery
	// rules (cmd/chorus wires device/discovery; fleet must not import
	// device). dir is the skill directory; a refusal's error is shown to the
	// operator as the reason.
	ValidateSkill func(dir string) (SkillInfo, error)
	// MQTTURL and ServerURL go into the agent credentials the controller returns.
	MQTTURL, ServerURL string
	// JoinCAPin is the SHA-256 (hex) of the certificate a joining agent
	// must find in the HTTP server's chain; empty without TLS (enrol.go).
	JoinCAPin string

	Now    func() time.Time
	Logger *slog.Logger

	Tick         time.Duration // rollout engine period (1s)
	Workers      int           // reconcile workers (4)
	RepublishAge time.Duration // re-publish desired to a device behind for this long (30s)
	MaxBackoff   time.Duration // cap of the per-device retry backoff (1m)
	MaxArchive   int64         // cap of a published archive (256 MiB)

	HomeAssistant HomeAssistant // discovery and update entities (on unless Disabled)
	Bridge        Bridge        // satellite ↔ hub relay and topic twins (routes.go)

	// SweepWait is how long the start-up sweep of removed devices' retained
	// topics (sweep.go) keeps listening after subscribing: 0 for the
	// embedded broker, which delivers retained messages within Subscribe;
	// a few seconds for an external one.
	SweepWait time.Duration

	// Connections, when set, ties presence to the broker's live connections
	// (liveness.go; the embedded broker). PresenceGrace (20s) is how long a
	// device recorded online may go without one after the start, or after
	// its connection closed, before it is marked offline.
	Connections   Connections
	PresenceGrace time.Duration

	// BrokerStats, when set, adds the broker's counters to Metrics.
	BrokerStats func() broker.Stats

	// SecretIssued, when set, is told each secret the controller creates
	// (AddDevice, RotateDevice, AddIntegration, AddOperator) with its MQTT
	// username, after the change is stored and the auth table rebuilt: the
	// only moment the plaintext is known, for an external broker's password
	// file or live sync (fleet/external). It runs on the caller's goroutine
	// and must not block for long; it cannot fail the change.
	SecretIssued func(ctx context.Context, username, secret string)
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Tick <= 0 {
		c.Tick = time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.RepublishAge <= 0 {
		c.RepublishAge = 30 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.MaxArchive <= 0 {
		c.MaxArchive = 256 << 20
	}
	if c.PresenceGrace <= 0 {
		c.PresenceGrace = 20 * time.Second
	}
	if c.SecretIssued == nil {
		c.SecretIssued = func(context.Context, string, string) {}
	}
}

// Controller is the running fleet controller.
type Controller struct {
	cfg   Config
	store Store
	log   *slog.Logger

	queue *workQueue // devices to reconcile
	inbox *inbox     // broker messages for the inbox goroutine
	kick  chan struct{}

	ha      *haPublisher  // what was published for Home Assistant
	repairs *availRepair  // device availability repairs (availability.go)
	live    *liveness     // presence tied to live connections (liveness.go)
	gw      *gatewayState // the fleet summary and the gateway's own config (gatewaystate.go)
	metrics *metrics      // GET /metrics (metrics.go)
	relay   relayRun      // the bridge relay (routes.go)
	changes changeHub     // subscribers to what changed (changes.go)
	births  births        // each device's latest birth details (changes.go)
	reports sync.Pool     // *reportTable: skill tables parsed reports reuse (report.go)

	// removals counts RemoveDevice's deletions: a pass that saw it unchanged
	// since it read its device needs no second read to know no removal
	// cleared its topics meanwhile (reconcileHA).
	removals atomic.Uint64

	tableMu sync.Mutex // serialises rebuildTable: the last rebuild reads the newest registry
	// joinMu serialises what changes an enrolment (collect, accept,
	// reject): each reads the entry and then writes the registry and the
	// entry in separate transactions, and one gateway owns the store
	// (gateway/dirlock), so a lock here makes each of them whole.
	joinMu sync.Mutex
	table  tableBox

	pubMu     sync.Mutex              // guards the fields below; never held across I/O
	published map[string]publishedDoc // device -> last desired document published
	startVer  map[execKey]int64       // execution -> desired version when it started (this run)
	local     map[string]bool         // device ids of LocalAccounts
	online    map[string]bool         // devices online, mirrored from the presence the inbox applies
	waiting   map[string]bool         // devices with queued executions the engine last saw
	rollouts  map[int64]rolloutKey    // rollout -> its immutable fields (judge's cache)
	rateHeld  map[int64]int           // rollout -> start rate that held executions back in the last pass
	// pendingFinish holds the executions whose verdict waits in verdicts
	// for runFinisher (finisher.go).
	pendingFinish map[execKey]bool

	finMu        sync.RWMutex    // guards finOpen and the closing of verdicts (finisher.go)
	finOpen      bool            // runFinisher runs and verdicts is open
	verdicts     chan verdictMsg // judged executions for runFinisher; closed by Close after the workers exited
	finisherDone chan struct{}   // closed when runFinisher has written everything and returned

	nextTimeout map[int64]time.Time   // rollout -> earliest deadline of its in-progress executions (engine goroutine only)
	inProgress  map[execKey]progress  // execution -> when the engine saw it in progress (engine goroutine only)
	starts      map[int64][]time.Time // rollout -> its starts within the rate window, wall clock (engine goroutine only)

	ctx    context.Context
	cancel context.CancelFunc
	unsubs []func()
	wg     sync.WaitGroup
	once   sync.Once
}

type publishedDoc struct {
	version int64
	at      time.Time
	// artifacts are the sha256s the document names; prev those of the
	// document published before it (OpenArtifact serves both).
	artifacts, prev []string
}

type execKey struct {
	rollout int64
	device  string
}

// New checks cfg and returns a controller that does nothing until Start.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil || cfg.Broker == nil {
		return nil, errors.New("fleet controller: Store and Broker are required")
	}
	if cfg.ArtifactDir == "" {
		return nil, errors.New("fleet controller: ArtifactDir is required")
	}
	cfg.setDefaults()
	c := &Controller{
		cfg: cfg, store: cfg.Store, log: cfg.Logger,
		kick:      make(chan struct{}, 1),
		published: map[string]publishedDoc{},
		startVer:  map[execKey]int64{},
		local:     map[string]bool{},
		online:    map[string]bool{},
		waiting:   map[string]bool{},
		rollouts:  map[int64]rolloutKey{},
		rateHeld:  map[int64]int{},

		pendingFinish: map[execKey]bool{},

		nextTimeout: map[int64]time.Time{},
		inProgress:  map[execKey]progress{},
		starts:      map[int64][]time.Time{},
	}
	c.queue = newWorkQueue(cfg.MaxBackoff)
	c.ha = newHAPublisher(cfg.HomeAssistant)
	c.repairs = newAvailRepair()
	c.live = newLiveness(cfg.Connections, cfg.PresenceGrace)
	c.gw = newGatewayState()
	c.inbox = newInbox()
	c.inbox.latestWins = c.live.on()
	c.metrics = newMetrics(c)
	for _, a := range cfg.LocalAccounts {
		if a.Role == broker.RoleDevice {
			c.local[a.Device] = true
		}
	}
	return c, nil
}

// Start rebuilds the auth table, subscribes to the devices' state topics and
// starts the goroutines; every device is reconciled once, which publishes its
// desired document (ARCHITECTURE.md §3: re-published at start-up). ctx bounds
// the start-up work only; Close stops the controller.
func (c *Controller) Start(ctx context.Context) error {
	if err := c.rebuildTable(ctx); err != nil {
		return fmt.Errorf("start fleet controller: %w", err)
	}
	// The online set is seeded before subscribing: from then on the inbox
	// keeps it in step with every presence it applies.
	if err := c.seedOnline(ctx); err != nil {
		return fmt.Errorf("start fleet controller: %w", err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Before the state subscriptions: a removed device's Home Assistant
	// config is cleared before the inbox clears its availability.
	if err := c.sweepRemoved(ctx); err != nil {
		c.Close()
		return fmt.Errorf("start fleet controller: sweep removed devices: %w", err)
	}
	if err := c.subscribe(); err != nil {
		c.Close()
		return fmt.Errorf("start fleet controller: %w", err)
	}
	c.goRun(c.runInbox)
	// Not in c.wg: it runs until Close closed verdicts after every worker
	// (its only producers) exited, and then drains it.
	c.startFinisher()
	for range c.cfg.Workers {
		c.goRun(c.runWorker)
	}
	c.goRun(c.runEngine)
	if err := c.startHA(); err != nil {
		c.Close()
		return fmt.Errorf("start fleet controller: %w", err)
	}
	if err := c.startRelay(ctx); err != nil {
		c.Close()
		return fmt.Errorf("start fleet controller: %w", err)
	}
	devs, err := c.store.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		c.Close()
		return fmt.Errorf("start fleet controller: %w", err)
	}
	for _, d := range devs {
		rep, _ := parseReport(d.Reported) // validated when stored
		c.gw.observe(d.ID, d.Online, loadedSkills(rep))
		c.queue.Add(d.ID)
	}
	c.gw.seededDevices()
	c.startLiveness(devs)
	c.goRun(c.runGatewayState)
	return nil
}

func (c *Controller) goRun(fn func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}

// Close unsubscribes and waits for every goroutine the controller started.
// It is idempotent.
func (c *Controller) Close() error {
	c.once.Do(func() {
		for _, u := range c.unsubs {
			u()
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.queue.ShutDown()
		c.repairs.stop()
		c.live.stop()
		c.inbox.shutDown()
		c.stopRelay()
		c.wg.Wait()
		c.stopFinisher() // every queued verdict written (finisher.go)
	})
	return nil
}

// Kick asks the rollout engine for a pass now.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// audit appends an audit entry; a failure is logged (the action happened).
func (c *Controller) audit(ctx context.Context, actor, action, subject string, detail any) {
	e := &fleet.AuditEntry{Actor: actor, Action: action, Subject: subject}
	if detail != nil {
		b, err := marshalDetail(detail)
		if err == nil {
			e.Detail = b
		}
	}
	if e.Actor == "" {
		e.Actor = "operator"
	}
	if err := c.store.AppendAudit(ctx, e); err != nil {
		c.log.Error("append audit entry", "action", action, "subject", subject, "error", err)
	}
	c.changed(subject)
}
