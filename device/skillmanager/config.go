package skillmanager

import (
	"context"
	"log/slog"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Defaults of SKILL_MANAGER §2, §4 and §5.
const (
	DefaultReadyTimeout         = 10 * time.Second  // skills.ready_timeout
	DefaultScanInterval         = 30 * time.Second  // the periodic scan (seeds/000)
	DefaultTrainTimeout         = 60 * time.Second  // seeds/000: training timeout
	DefaultPHALTimeout          = 3 * time.Second   // connectivity.phal_timeout
	DefaultCheckTimeout         = 5 * time.Second   // bound of the HTTP fallback check
	DefaultIntentServiceTimeout = 300 * time.Second // skills.intent_service_timeout (ovos-behaviour §1.4)
	DefaultStopTimeout          = 30 * time.Second  // bound of one skill stop outside Close
)

// BusClient is what the manager needs of the device bus; *bus.Client
// satisfies it.
type BusClient interface {
	Emit(ctx context.Context, m envelope.Message) error
	On(msgType string, h bus.Handler) (off func(), err error)
	Reply(ctx context.Context, d bus.Delivery, m envelope.Message) error
	Request(ctx context.Context, m envelope.Message, replyType string) (bus.Delivery, error)
}

var _ BusClient = (*bus.Client)(nil)

// Process is one running skill; *process.Process satisfies it.
type Process interface {
	Done() <-chan struct{}          // closed once the process has exited
	ExitErr() error                 // why it exited, once Done is closed
	Stop(ctx context.Context) error // SIGTERM, then SIGKILL after the grace; idempotent
	Tail() []string                 // the last lines of its output
	PID() int
}

// Launcher starts skill processes. It must refuse a skill whose exec changed
// since discovery (SKILL_MANAGER §1).
type Launcher interface {
	Start(s discovery.Skill) (Process, error)
}

// LauncherFunc adapts a function to Launcher.
type LauncherFunc func(s discovery.Skill) (Process, error)

// Start calls f.
func (f LauncherFunc) Start(s discovery.Skill) (Process, error) { return f(s) }

// Launch adapts a start function returning a concrete process type, such as
// (*process.Launcher).Start, to Launcher:
//
//	skillmanager.Launch(launcher.Start)
//
// A nil concrete process is never wrapped into a non-nil interface.
func Launch[P Process](start func(discovery.Skill) (P, error)) Launcher {
	return LauncherFunc(func(s discovery.Skill) (Process, error) {
		p, err := start(s)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
}

// Config configures a Manager. Bus and Launcher are required; every other
// zero value has a working default.
type Config struct {
	Bus       BusClient
	Launcher  Launcher
	Discovery discovery.Config

	// Blacklist returns skills.blacklisted_skills; it is called on every
	// pass, so a config reload takes effect on the next one. nil = none.
	Blacklist func() []string
	// Capabilities are the free requirement words this device meets
	// (skills.capabilities), such as "gpu".
	Capabilities []string

	ReadyTimeout time.Duration // default 10 s
	// OVOSLoadTimeout bounds a runtime ovos skill's load; default
	// DefaultOVOSLoadTimeout.
	OVOSLoadTimeout time.Duration
	ScanInterval    time.Duration // default 30 s
	TrainTimeout    time.Duration // default 60 s
	StopTimeout     time.Duration // bound of one stop outside Close; default 30 s

	// PHALTimeout bounds the startup ovos.PHAL.internet_check; default 3 s,
	// negative skips the question (SKILL_MANAGER §5: "0 skips it" — a zero
	// Duration here means "default", so the agent maps the config value 0
	// to a negative one; see PHALSkip).
	PHALTimeout time.Duration
	// AskPHAL asks ovos.PHAL.internet_check and returns only an answer the
	// agent trusts: a reply to its own question from the device's OVOS
	// services (connectivity.PHAL). nil skips the question.
	AskPHAL func(ctx context.Context) (network, internet bool, err error)
	// CheckInternet is the startup fallback when PHAL does not answer
	// (connectivity.CheckInternet with connectivity.check_urls). nil means
	// internet false with the reason "no internet check configured".
	CheckInternet func(ctx context.Context) (bool, error)
	CheckTimeout  time.Duration // bound of CheckInternet; default 5 s

	// WaitForIntentService polls mycroft.intents.is_ready before the
	// startup load (skills.wait_for_intent_service), up to
	// IntentServiceTimeout (default 300 s).
	WaitForIntentService bool
	IntentServiceTimeout time.Duration

	// ReadySettings are OVOS's ready_settings: what must hold before the
	// manager emits mycroft.ready (ready.go). nil = DefaultReadySettings.
	ReadySettings []string

	// InactiveFile persists the deactivated set (SKILL_MANAGER §7 [ours]).
	// "" keeps it in memory only.
	InactiveFile string

	// OnChange is called whenever the skill table, the connectivity flags
	// or the manager status change, from one goroutine, never with a lock
	// held. The agent publishes the retained skills and connectivity
	// topics from it.
	OnChange func(Snapshot)

	Now    func() time.Time                     // default time.Now
	After  func(time.Duration) <-chan time.Time // default time.After
	Logger *slog.Logger                         // default discards
}

// PHALSkip is the PHALTimeout that skips the PHAL question.
const PHALSkip time.Duration = -1

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadyTimeout, DefaultReadyTimeout)
	def(&c.OVOSLoadTimeout, DefaultOVOSLoadTimeout)
	def(&c.ScanInterval, DefaultScanInterval)
	def(&c.TrainTimeout, DefaultTrainTimeout)
	def(&c.StopTimeout, DefaultStopTimeout)
	def(&c.CheckTimeout, DefaultCheckTimeout)
	def(&c.IntentServiceTimeout, DefaultIntentServiceTimeout)
	if c.PHALTimeout == 0 {
		c.PHALTimeout = DefaultPHALTimeout
	}
	if c.ReadySettings == nil {
		c.ReadySettings = DefaultReadySettings
	}
	if c.Blacklist == nil {
		c.Blacklist = func() []string { return nil }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
