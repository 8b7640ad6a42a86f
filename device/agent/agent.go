// Package agent runs one satellite: it connects the device to the broker,
// reports its availability, birth, connectivity and skills as retained
// topics, and runs the skill manager, the skill processes, the connectivity
// monitors, the settings watcher and the OVOS websocket drop-in.
package agent

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/connectivity"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/settings"
	"github.com/chorus-edge/chorus/device/skillmanager"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/dirlock"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/mqttmsg"
	"github.com/chorus-edge/chorus/gateway/topic"
	"github.com/chorus-edge/chorus/gateway/wsbus"
)

// Config configures an agent. Device, MQTTURL, Username, Password, Key and
// DataDir are required.
type Config struct {
	Device             string
	MQTTURL            string
	Username, Password string
	Key                ed25519.PrivateKey // signs the skills' credentials
	KeyVersion         int
	ServerURL          string // the gateway's HTTP base URL (artifacts)

	DataDir string // holds installed/, settings/, the session counter and the inactive set
	// DataRoot is where the agent's data tree starts (--data-dir); with
	// skills under their own uids, the directories from DataRoot down to
	// DataDir that the agent owns are made searchable (o+x) so a skill can
	// reach its own entries. Default DataDir.
	DataRoot   string
	Bundled    []string // read-only skill roots, scanned first
	UserSkills []string // user skill roots, scanned last

	WSListen  string // the OVOS websocket drop-in's host:port; "" = off
	WSRoute   string
	WSMaxSize int // bytes (websocket.max_msg_size)
	// WSMaxPacket is the broker's maximum MQTT packet size
	// (broker.max_packet_size); default the embedded broker's.
	WSMaxPacket int
	// WSServicesUsers are the users (names or uids) the device's OVOS
	// services run as (websocket.services_users).
	WSServicesUsers []string
	// WSServicesConfig is where the agent writes the services' mycroft.conf
	// with their route (websocket.services_config); "" writes nothing.
	WSServicesConfig string

	Skills       configs.Skills
	Connectivity configs.Connectivity
	// ReadySettings is ready_settings (mycroft.ready); nil = ["skills"].
	ReadySettings []string
	// Blacklist re-reads skills.blacklisted_skills; nil uses Skills.BlacklistedSkills.
	Blacklist func() []string

	WillDelay time.Duration // before the broker publishes offline for a lost connection; default 5 s
	KeepAlive time.Duration // MQTT keepalive (agent.keepalive); default bus.DefaultKeepAlive
	Version   string
	Bin       string // the chorus executable skills call (CHORUS_BIN); default os.Executable()
	// Trampoline runs process.ExecMain (`chorus skill-exec`), which drops
	// privileges before a skill starts; default os.Executable() skill-exec.
	Trampoline []string
	Interfaces func() ([]connectivity.Interface, error)
	Logger     *slog.Logger
}

// Agent is a running agent. Close stops it in the order of SKILL_MANAGER §9.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	started time.Time
	session atomic.Uint64

	mqtt *bus.MQTT
	// stopDrain undoes connect's drain-on-cancel once Start returns.
	stopDrain func() bool
	bus       *bus.Client
	manager   *skillmanager.Manager
	monitor   *connectivity.Monitor
	watcher   *settings.Watcher
	ws        *wsbus.Server
	reporter  *reporter
	desired   *desiredRunner
	installs  *installRequests // OVOS-INSTALL-1 requests (SKILL_MANAGER §10)
	applied   appliedWaiter
	iso       *isolation // how skills run; set before the first connection
	launcher  *process.Launcher
	phal      *connectivity.PHAL // the trusted PHAL question (websocket.go)
	lock      *dirlock.Lock      // the data dir's, held until abort
}

func (c *Config) setDefaults() error {
	switch {
	case c.Device == "" || c.MQTTURL == "" || c.Username == "" || c.DataDir == "":
		return errors.New("agent: device, mqtt url, username and data dir are required")
	case len(c.Key) != ed25519.PrivateKeySize:
		return errors.New("agent: the device's skill signing key is required")
	}
	if err := topic.ValidDeviceID(c.Device); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if c.DataRoot == "" {
		c.DataRoot = c.DataDir
	}
	if c.WillDelay == 0 {
		c.WillDelay = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Skills.SettingsRoot == "" {
		c.Skills.SettingsRoot = filepath.Join(c.DataDir, "settings")
	}
	if c.Blacklist == nil {
		list := c.Skills.BlacklistedSkills
		c.Blacklist = func() []string { return list }
	}
	return nil
}

// Start connects and starts every part of the agent. It returns once the
// skill manager's startup sequence (SKILL_MANAGER §5) has run.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := makeDataDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("agent data dir: %w", err)
	}
	// One process per data dir (issue 16): a second agent of the same
	// device in the same dir would share its session, installs and skills.
	lock, err := dirlock.Acquire(cfg.DataDir, "chorus agent "+cfg.Device)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("device", cfg.Device), started: time.Now(), lock: lock}
	a.reporter = newReporter(a)
	err = a.start(ctx)
	if a.stopDrain != nil {
		a.stopDrain() // a running agent is drained by Close, not by ctx
	}
	if err != nil {
		a.abort()
		return nil, err
	}
	return a, nil
}

func (a *Agent) start(ctx context.Context) error {
	var err error
	if a.iso, err = a.openIsolation(); err != nil {
		return err
	}
	if err := a.connect(ctx); err != nil {
		return err
	}
	if a.bus, err = bus.New(bus.Config{Transport: a.mqtt, Device: a.cfg.Device, Logger: a.log.With("component", "bus")}); err != nil {
		return err
	}
	a.phal = connectivity.NewPHAL(a.bus.Emit)
	if err := a.startManager(); err != nil {
		return err
	}
	if err := a.startServices(ctx); err != nil {
		return err
	}
	if err := a.startInstaller(ctx); err != nil {
		return err
	}
	if err := a.startSkillSwitches(ctx); err != nil {
		return err
	}
	if err := a.startInstallRequests(); err != nil {
		return err
	}
	a.reporter.birthChanged()
	if err := a.manager.Start(ctx); err != nil {
		return err
	}
	return a.startMonitor(ctx)
}

// connect dials the broker. Each connection attempt takes a fresh birth
// session number, carried by its Will and by the birth published once up.
func (a *Agent) connect(ctx context.Context) error {
	avail, err := topic.Availability(a.cfg.Device)
	if err != nil {
		return err
	}
	a.mqtt, err = bus.DialMQTT(ctx, bus.MQTTConfig{
		URL: a.cfg.MQTTURL, ClientID: a.cfg.Device,
		Username: a.cfg.Username, Password: a.cfg.Password,
		CleanStart: true, SessionExpiry: 60,
		WillDelay: uint32(a.cfg.WillDelay / time.Second), KeepAlive: uint16(a.cfg.KeepAlive / time.Second),
		WillFunc: func() *bus.Packet {
			n, err := nextSession(a.cfg.DataDir)
			if err != nil {
				a.log.Error("birth session number", "error", err)
				n = a.session.Load() + 1
			}
			a.session.Store(n)
			return a.availability(avail, "offline")
		},
		OnConnect: a.reporter.connected,
		Logger:    a.log.With("component", "mqtt"),
	})
	if err != nil {
		return fmt.Errorf("agent %s: %w", a.cfg.Device, err)
	}
	// Stopped while starting (SIGTERM before Start returned): what start is
	// waiting on the broker for, and abort's goodbye, must not wait for a
	// broker that is gone (issue 16, point 6), as after Close's Drain.
	a.stopDrain = context.AfterFunc(ctx, a.mqtt.Drain)
	return nil
}

func (a *Agent) availability(t, state string) *bus.Packet {
	return &bus.Packet{Topic: t, Payload: []byte(state), QoS: 1, Retain: true,
		User: mqttmsg.UserProperties{{Key: "session", Value: strconv.FormatUint(a.session.Load(), 10)}}}
}

func (a *Agent) startManager() error {
	a.launcher = process.NewLauncher(process.Config{
		MQTTURL: a.cfg.MQTTURL, Device: a.cfg.Device, Key: a.cfg.Key, KeyVersion: a.cfg.KeyVersion,
		Credentials: a.cfg.Skills.Credentials, DeviceSecret: a.cfg.Password,
		SettingsRoot: a.cfg.Skills.SettingsRoot, Bin: a.cfg.Bin, StopGrace: a.cfg.Skills.StopGrace.Duration(),
		Logger:   a.log.With("component", "skill"),
		Identity: a.iso.identity(), DropCaps: a.iso.dropCaps, Trampoline: a.cfg.Trampoline,
		Records:  filepath.Join(a.cfg.DataDir, "running-skills.json"),
		SkillEnv: a.skillEnv,
		OVOS:     a.ovosRuntime(),
	})
	if n, err := a.launcher.ReapOrphans(); err != nil {
		a.log.Warn("reap skills a previous run left", "error", err)
	} else if n > 0 {
		a.log.Warn("killed what skills of a previous run left running", "groups", n)
	}
	phal := a.cfg.Connectivity.PHALTimeout.Duration()
	if phal == 0 {
		phal = skillmanager.PHALSkip
	}
	urls := a.cfg.Connectivity.CheckURLs
	var err error
	a.manager, err = skillmanager.New(skillmanager.Config{
		Bus: a.bus, Launcher: a.skillLauncher(),
		Discovery: discovery.Config{
			Bundled: a.cfg.Bundled, Installed: a.installedRoot(), User: a.cfg.UserSkills,
		},
		Blacklist: a.cfg.Blacklist, Capabilities: a.cfg.Skills.Capabilities,
		ReadyTimeout: a.cfg.Skills.ReadyTimeout.Duration(), ScanInterval: a.cfg.Skills.ScanInterval.Duration(),
		TrainTimeout: a.cfg.Skills.TrainTimeout.Duration(), PHALTimeout: phal, AskPHAL: a.askPHAL(),
		CheckInternet: func(ctx context.Context) (bool, error) {
			return connectivity.CheckInternet(ctx, urls, http.DefaultClient)
		},
		WaitForIntentService: a.cfg.Skills.WaitForIntentService,
		ReadySettings:        a.cfg.ReadySettings,
		OVOSLoadTimeout:      a.cfg.Skills.OVOS.LoadTimeout.Duration(),
		InactiveFile:         filepath.Join(a.cfg.DataDir, "inactive.json"),
		OnChange:             a.reporter.update,
		Logger:               a.log,
	})
	return err
}

// startServices starts the parts that feed the manager events: the
// websocket drop-in and the settings watcher.
func (a *Agent) startServices(ctx context.Context) error {
	var err error
	if a.cfg.WSListen != "" {
		if err := a.startWebsocket(ctx); err != nil {
			return err
		}
	}
	a.watcher, err = settings.Watch(settings.Config{
		Root: a.cfg.Skills.SettingsRoot, Logger: a.log.With("component", "settings"),
		Emit: func(skill string) {
			a.emit("ovos.skills.settings_changed", map[string]any{"skill_id": skill})
		},
	})
	if err != nil {
		return err
	}
	return nil
}

// startMonitor starts the connectivity monitors once the manager listens:
// their first observation is an event the manager must see (an event
// published before it subscribed would be lost, not replayed).
func (a *Agent) startMonitor(ctx context.Context) error {
	var err error
	a.monitor, err = connectivity.New(connectivity.Config{
		Emit: a.emit, Interfaces: a.cfg.Interfaces, CheckURLs: a.cfg.Connectivity.CheckURLs,
		Interval: a.cfg.Connectivity.CheckInterval.Duration(), Logger: a.log.With("component", "connectivity"),
	})
	if err != nil {
		return err
	}
	return a.monitor.Start(ctx)
}

// emit publishes an event on the device bus, bounded in time.
func (a *Agent) emit(t string, data map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.bus.Emit(ctx, envelope.New(t, data)); err != nil {
		a.log.Warn("emit", "type", t, "error", err)
	}
}

// Isolation says how skills run: IsolationUID or IsolationNone.
func (a *Agent) Isolation() string { return a.iso.Mode }

// WSAddr returns the websocket drop-in's address, or "" when it is off.
func (a *Agent) WSAddr() string {
	if a.ws == nil {
		return ""
	}
	return a.ws.Addr()
}

// Close shuts the agent down (SKILL_MANAGER §9): the manager stops its
// scan and every skill (emitting detach_skill), the monitors, watcher and
// drop-in stop, then `offline` is published before a clean disconnect, which
// does not fire the Will.
func (a *Agent) Close(ctx context.Context) error {
	if a.mqtt != nil {
		// Shutdown must not wait for a broker that is not there (issue 16,
		// point 6): every publish from here on is sent over a live
		// connection or fails at once.
		a.mqtt.Drain()
	}
	var errs []error
	if a.manager != nil {
		errs = append(errs, a.manager.Close(ctx))
	}
	a.abort()
	return errors.Join(errs...)
}

// installedDir is the installer's skill root inside the data dir.
const installedDir = "installed"

// makeDataDir creates the data dir (0700: nothing in it is for others) and
// the installed root (0711: a skill under its own uid reaches its code,
// whose directories are 0755, but cannot list the others).
func makeDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	root := filepath.Join(dir, installedDir)
	if err := os.MkdirAll(root, 0o711); err != nil {
		return err
	}
	return os.Chmod(root, 0o711)
}

func (a *Agent) installedRoot() string { return filepath.Join(a.cfg.DataDir, installedDir) }

// abort stops everything started so far, in reverse order.
func (a *Agent) abort() {
	if a.mqtt != nil {
		a.mqtt.Drain() // shutting down: nothing below waits for a broker that is gone
	}
	if a.installs != nil {
		a.installs.stop()
	}
	if a.desired != nil {
		a.desired.stop()
	}
	if a.monitor != nil {
		_ = a.monitor.Close()
	}
	if a.watcher != nil {
		_ = a.watcher.Close()
	}
	if a.ws != nil {
		_ = a.ws.Close()
	}
	a.reporter.stop()
	if a.mqtt != nil {
		a.publishOffline()
	}
	if a.bus != nil {
		_ = a.bus.Close()
	}
	if a.mqtt != nil {
		_ = a.mqtt.Close()
	}
	a.iso.close()
	_ = a.lock.Release()
}

func (a *Agent) publishOffline() {
	avail, _ := topic.Availability(a.cfg.Device)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := a.mqtt.Publish(ctx, *a.availability(avail, "offline")); err != nil {
		a.log.Warn("publish offline", "error", err)
	}
}
