package connectivity

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// The OVOS events the monitors emit (ovos-behaviour §1.5).
const (
	NetworkConnected     = "mycroft.network.connected"
	NetworkDisconnected  = "mycroft.network.disconnected"
	InternetConnected    = "mycroft.internet.connected"
	InternetDisconnected = "mycroft.internet.disconnected"
)

// Defaults filled in by New.
const (
	DefaultNetworkInterval = 5 * time.Second
	DefaultInterval        = 30 * time.Second
	DefaultCheckTimeout    = 5 * time.Second
)

// Config configures a Monitor. Only Emit is required.
type Config struct {
	// Emit reports a change. It is called from the monitor's goroutines,
	// never concurrently, and must not block for long (the agent publishes
	// the event on the device bus).
	Emit func(eventType string, data map[string]any)

	Interfaces      func() ([]Interface, error) // default SystemInterfaces
	NetworkInterval time.Duration               // interface poll; default 5 s

	CheckURLs    []string      // connectivity.check_urls; none = internet reported down, never probed
	Interval     time.Duration // HTTP check interval; default 30 s
	CheckTimeout time.Duration // bound of one HTTP check; default 5 s
	Client       *http.Client  // default http.DefaultClient

	After  func(time.Duration) <-chan time.Time // default time.After
	Now    func() time.Time                     // default time.Now
	Logger *slog.Logger                         // default discards
}

func (c Config) withDefaults() Config {
	if c.Interfaces == nil {
		c.Interfaces = SystemInterfaces
	}
	if c.NetworkInterval <= 0 {
		c.NetworkInterval = DefaultNetworkInterval
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// State is what the monitors last observed.
type State struct {
	Network        bool
	Internet       bool
	NetworkReason  string // the interface that is up, or why none is
	InternetReason string // the URL check's error, or ErrNoCheckURLs' text; "" when up
	Checked        bool   // at least one observation of each monitor was made
	ChangedAt      time.Time
}

// Monitor runs the network and internet monitors. Start launches one
// goroutine per monitor; Close stops them and returns once they exited.
//
// A monitor emits only on a change. The first observation emits only the
// "connected" event: "down" is what the skill manager assumes until told
// otherwise, and emitting a disconnect at start would clear a flag that
// PHAL (or another monitor) set meanwhile.
type Monitor struct {
	cfg Config

	// mu guards the fields below it. Emit is never called with mu held.
	mu       sync.Mutex
	state    State
	netSeen  bool
	inetSeen bool
	started  bool
	closed   bool
	cancel   context.CancelFunc

	emitMu sync.Mutex // serializes Emit across the monitors
	wg     sync.WaitGroup
}

// New returns a Monitor; it does nothing until Start.
func New(cfg Config) (*Monitor, error) {
	if cfg.Emit == nil {
		return nil, errors.New("connectivity: Config.Emit is required")
	}
	cfg = cfg.withDefaults()
	m := &Monitor{cfg: cfg}
	if len(cfg.CheckURLs) == 0 {
		m.state.InternetReason = ErrNoCheckURLs.Error()
	}
	return m, nil
}

// Start launches the monitors. They stop when ctx ends or Close is called.
// Calling Start twice, or after Close, is an error.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return errors.New("connectivity: monitor already started or closed")
	}
	m.started = true
	ctx, m.cancel = context.WithCancel(ctx)
	m.goLoop(ctx, m.cfg.NetworkInterval, m.checkNetwork)
	if len(m.cfg.CheckURLs) > 0 {
		m.goLoop(ctx, m.cfg.Interval, m.checkInternet)
	} else {
		m.cfg.Logger.Info("internet check disabled: " + ErrNoCheckURLs.Error())
	}
	return nil
}

// Close stops the monitors and waits for them. Idempotent.
func (m *Monitor) Close() error {
	m.mu.Lock()
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	return nil
}

// State returns the last observation.
func (m *Monitor) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// goLoop runs check now and then every interval until ctx ends.
func (m *Monitor) goLoop(ctx context.Context, every time.Duration, check func(context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			check(ctx)
			select {
			case <-ctx.Done():
				return
			case <-m.cfg.After(every):
			}
		}
	}()
}

func (m *Monitor) checkNetwork(ctx context.Context) {
	var up bool
	var reason string
	ifs, err := m.cfg.Interfaces()
	if err != nil {
		reason = err.Error()
	} else {
		up, reason = NetworkUp(ifs)
	}
	m.mu.Lock()
	first := !m.netSeen
	changed := first || m.state.Network != up
	m.netSeen = true
	m.state.Network, m.state.NetworkReason = up, reason
	m.touchLocked(changed)
	m.mu.Unlock()
	m.report(ctx, changed, first, up, NetworkConnected, NetworkDisconnected, reason)
}

func (m *Monitor) checkInternet(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, m.cfg.CheckTimeout)
	up, err := CheckInternet(cctx, m.cfg.CheckURLs, m.cfg.Client)
	cancel()
	if ctx.Err() != nil {
		return // stopping: a cancelled check says nothing about the internet
	}
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	m.mu.Lock()
	first := !m.inetSeen
	changed := first || m.state.Internet != up
	m.inetSeen = true
	m.state.Internet, m.state.InternetReason = up, reason
	m.touchLocked(changed)
	m.mu.Unlock()
	m.report(ctx, changed, first, up, InternetConnected, InternetDisconnected, reason)
}

func (m *Monitor) touchLocked(changed bool) {
	m.state.Checked = m.netSeen && (m.inetSeen || len(m.cfg.CheckURLs) == 0)
	if changed {
		m.state.ChangedAt = m.cfg.Now().UTC()
	}
}

// report emits the event for an observed change (see Monitor).
func (m *Monitor) report(ctx context.Context, changed, first, up bool, onUp, onDown, reason string) {
	if !changed || (first && !up) || ctx.Err() != nil {
		return
	}
	ev := onDown
	if up {
		ev = onUp
	}
	m.cfg.Logger.Info("connectivity changed", "event", ev, "reason", reason)
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	m.cfg.Emit(ev, map[string]any{})
}
