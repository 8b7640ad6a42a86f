package skillmanager

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
)

// Manager runs the skill lifecycle of one device. See the package doc for
// its concurrency guarantees.
type Manager struct {
	cfg Config
	log *slog.Logger

	// Goroutine ownership. tasks holds passes, loads waiting for
	// readiness, handler work, training waits and the scan loop: all stop
	// when runCtx is cancelled. watchers holds one exit watcher per
	// tracked process: they end when the process has exited, which Close
	// ensures by stopping every process.
	tasks    sync.WaitGroup
	watchers sync.WaitGroup
	notify   *notifier
	ready    readyGate // wakes the mycroft.ready announcer (ready.go)
	offs     []func()  // bus unsubscriptions; written by Start, read by Close

	persistMu sync.Mutex // serializes writes of InactiveFile; taken before mu, never inside it

	// mu guards every field below. Never held during I/O, a bus call, a
	// process start or stop, or a callback.
	mu        sync.Mutex
	status    Status
	closed    bool // Close began: no new task, no new reservation
	runCtx    context.Context
	cancel    context.CancelFunc
	serial    uint64                 // numbers entries and attempts, so a stale one is never mistaken for a replacement
	tracked   map[string]*entry      // skills with a loader: loaded, or inactive
	loading   map[string]*attempt    // reservations: loads in flight (seeds/000 _loading_plugin_skills)
	failures  map[string]*failure    // retry bookkeeping (seeds/000 _plugin_skill_failures)
	inactive  map[string]bool        // the persisted deactivated set
	warned    map[string]bool        // blacklisted ids already warned about
	catalog   *discovery.Catalog     // the last discovery that succeeded (for Snapshot)
	since     map[string]stateMark   // when each reported skill entered its state
	conn      flags                  // connectivity gating flags
	pending   []pendingEvent         // connectivity events received before ready (§5)
	training  TrainingReport         // the last training request's outcome
	trainWait map[uint64]chan string // training requests waiting for mycroft.skills.trained

	passes     *trigger      // load passes asked for by connectivity events
	installs   *trigger      // restarts and passes asked for by install completions
	uninstalls *trigger      // unloads asked for by uninstall completions
	requests   chan struct{} // slots of the request handlers running (maxRequests)
}

// entry is a tracked skill: a loaded process, or an inactive skill (no
// process). An entry is replaced, never revived: a reload makes a new one.
type entry struct {
	skill  discovery.Skill
	serial uint64
	proc   Process // nil when inactive; guarded by Manager.mu
	active bool    // guarded by Manager.mu
}

// attempt is one load in flight, holding the reservation of its id.
type attempt struct {
	skill  discovery.Skill
	serial uint64
	ready  chan struct{} // closed when the skill reports chorus.skill.ready (runtime ovos: its launcher's mycroft.skills.loaded)
	once   sync.Once
	ovos   *ovosLoad // runtime ovos skills only (ovos.go)
	// deferred: no pass waits for this load (a launcher started before
	// ready); it requests training itself once loaded. Set before begin.
	deferred bool

	// Set under Manager.mu by events that land while the load runs; the
	// load honours them on the way out.
	gone        bool // an uninstall found the skill gone (§6 verdict)
	deactivated bool // skillmanager.deactivate / keep
}

func (a *attempt) markReady() { a.once.Do(func() { close(a.ready) }) }

type stateMark struct {
	state State
	since time.Time
}

// New checks cfg and returns a Manager in status started. It reads the
// persisted inactive set; an unreadable file is logged and read as empty
// (it is rewritten on the next activate or deactivate).
func New(cfg Config) (*Manager, error) {
	if cfg.Bus == nil {
		return nil, errors.New("skillmanager: Config.Bus is required")
	}
	if cfg.Launcher == nil {
		return nil, errors.New("skillmanager: Config.Launcher is required")
	}
	cfg = cfg.withDefaults()
	m := &Manager{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "skillmanager"),
		status:     StatusStarted,
		tracked:    map[string]*entry{},
		loading:    map[string]*attempt{},
		failures:   map[string]*failure{},
		warned:     map[string]bool{},
		since:      map[string]stateMark{},
		trainWait:  map[uint64]chan string{},
		passes:     newTrigger(),
		installs:   newTrigger(),
		uninstalls: newTrigger(),
		requests:   make(chan struct{}, maxRequests),
	}
	m.conn.allowReloads = true
	m.conn.changedAt = cfg.Now().UTC()
	m.conn.source = "startup"
	inactive, err := loadInactive(cfg.InactiveFile)
	if err != nil {
		m.log.Warn("inactive skills file unreadable; starting with none deactivated", "file", cfg.InactiveFile, "err", err)
	}
	m.inactive = inactive
	m.notify = newNotifier(m.Snapshot, cfg.OnChange)
	return m, nil
}

// goTask runs f in a goroutine owned by the manager (tasks). It refuses,
// returning false, once Close has begun.
func (m *Manager) goTask(f func(ctx context.Context)) bool {
	m.mu.Lock()
	if m.closed || m.runCtx == nil {
		m.mu.Unlock()
		return false
	}
	ctx := m.runCtx
	m.tasks.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.tasks.Done()
		f(ctx)
	}()
	return true
}

// changed schedules an OnChange call with the latest state.
func (m *Manager) changed() {
	m.notify.poke()
	m.ready.poke()
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

func (m *Manager) nextSerialLocked() uint64 {
	m.serial++
	return m.serial
}

// Status returns the manager's status.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}
