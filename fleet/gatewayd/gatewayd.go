// Package gatewayd assembles the `chorus gateway` process (ARCHITECTURE.md
// §1): the MQTT broker (the embedded one, or a connection to an external
// broker), the fleet store and controller, the HTTP API with the Mosquitto
// exports, and the gateway's local credentials and up.json. cmd/chorus turns
// flags into a Config and runs a Main; tests and benchmarks start the same
// Main in process (benbjohnson/wtf, cmd/wtfd).
package gatewayd

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/dashboard"
	"github.com/chorus-edge/chorus/fleet/external"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/advertise"
	"github.com/chorus-edge/chorus/gateway/dirlock"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Config configures a Main. The zero value runs the embedded broker with
// configs.Default's settings (DataDir "chorus-data").
type Config struct {
	// Config is the gateway's configuration: the file with the flags laid
	// over it (the zero value: configs.Default()).
	Config *configs.Config
	// LocalDevice, when set, provisions a local device with its agent's
	// credentials and registers it in the fleet like any other (`chorus up`).
	LocalDevice string
	// External, when set, runs on an external MQTT 5 broker instead of the
	// embedded one (`--broker external`; no local device there).
	External *external.Config
	// ValidateSkill checks a published archive with the agent's discovery
	// rules (cmd/chorus wires device/discovery; fleet must not import
	// device). Nil refuses every archive.
	ValidateSkill func(dir string) (controller.SkillInfo, error)
	Version       string // on /healthz and in Home Assistant's discovery
	Logger        *slog.Logger
	// Host is what advertised addresses are derived from when none is
	// configured (gateway/advertise); the zero value reads this host.
	Host advertise.Host
}

func (c *Config) setDefaults() {
	if c.Config == nil {
		d := configs.Default()
		c.Config = &d
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ValidateSkill == nil {
		c.ValidateSkill = func(string) (controller.SkillInfo, error) {
			return controller.SkillInfo{}, errors.New("this gateway validates no skills")
		}
	}
}

// Main is a gateway process: New, Run, and Close when done.
type Main struct {
	cfg Config
	log *slog.Logger

	local   localauth.Local
	broker  *broker.Broker // the embedded broker; nil on an external one
	ext     *external.Conn // the external broker; nil on the embedded one
	store   *sqlite.DB
	fleet   *controller.Controller
	exports *external.Exporter
	token   string
	dash    *dashboard.Dashboard
	http    *httpapi.Server
	up      configs.Up
	lock    *dirlock.Lock // the data dir's, released last by Close
	joinPin string        // the TLS pin join tokens carry (joinPin)

	closeOnce sync.Once
	closeErr  error
}

// New returns a Main that does nothing until Run.
func New(cfg Config) *Main {
	cfg.setDefaults()
	return &Main{cfg: cfg, log: cfg.Logger}
}

// Run starts the broker, the fleet controller and the HTTP API, writes
// up.json and announces the gateway online; it returns once all serve. ctx
// bounds the start only: Close stops the gateway. On an error, what started
// is stopped again.
func (m *Main) Run(ctx context.Context) error {
	err := m.run(ctx)
	if err != nil {
		_ = m.Close()
	}
	return err
}

func (m *Main) run(ctx context.Context) error {
	cfg := m.cfg.Config
	device := m.cfg.LocalDevice
	if m.cfg.External != nil {
		device = ""
	}
	// One process per data dir (issue 16): a second gateway would rewrite
	// up.json and share the broker store and fleet.db with this one.
	what := "chorus gateway"
	if m.cfg.LocalDevice != "" {
		what = "chorus up"
	}
	var err error
	if m.lock, err = dirlock.Acquire(cfg.DataDir, what); err != nil {
		return err
	}
	if m.local, err = localauth.LoadOrCreate(cfg.DataDir, device); err != nil {
		return err
	}
	accounts, err := m.local.Accounts()
	if err != nil {
		return err
	}
	if err := m.startBroker(ctx, accounts); err != nil {
		return err
	}
	ln, tlsCfg, err := listenHTTP(cfg)
	if err != nil {
		return err
	}
	m.up = configs.Up{MQTTURL: m.mqttURL(), HTTPURL: httpURL(ln, tlsCfg), Observer: m.local.Observer, Operator: m.local.Operator}
	if m.up.AdvertiseMQTTURL, m.up.AdvertiseHTTPURL, err = m.advertised(ln, tlsCfg); err != nil {
		ln.Close()
		return err
	}
	m.joinPin = joinPin(tlsCfg)
	if err := m.startFleet(ctx, accounts, device); err != nil {
		ln.Close()
		return err
	}
	if err := m.startHTTP(ln, tlsCfg); err != nil {
		return err
	}
	if m.local.Device != nil && device != "" {
		agent := *m.local.Device
		agent.MQTTURL, agent.ServerURL = m.up.MQTTURL, m.up.HTTPURL
		m.up.Device, m.up.Agent = device, &agent
	}
	if err := configs.WriteUp(configs.UpPath(cfg.DataDir), m.up); err != nil {
		return err
	}
	m.setAvailability("online")
	return nil
}

// startBroker starts the embedded broker with the local accounts (the
// controller installs the registry's), or dials the external one.
func (m *Main) startBroker(ctx context.Context, accounts []broker.Account) error {
	if x := m.cfg.External; x != nil {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		xc := *x
		if xc.Logger == nil {
			xc.Logger = m.log
		}
		var err error
		m.ext, err = external.Dial(dctx, xc)
		return err
	}
	table, err := broker.NewTable(accounts...)
	if err != nil {
		return err
	}
	bcfg, err := brokerConfig(m.cfg.Config, m.log)
	if err != nil {
		return err
	}
	bcfg.RetainedDictionary = retainedDictionary(m.cfg.Version)
	m.broker, err = broker.Start(bcfg, table)
	return err
}

func brokerConfig(cfg *configs.Config, log *slog.Logger) (broker.Config, error) {
	tlsCfg, err := cfg.Broker.TLS.Config()
	if err != nil {
		return broker.Config{}, fmt.Errorf("broker.tls: %w", err)
	}
	return broker.Config{
		MQTTListen: cfg.Broker.MQTTListen, WSListen: cfg.Broker.WSListen, TLS: tlsCfg,
		DataDir:          cfg.DataDir + "/broker",
		MaxPacketSize:    uint32(cfg.Broker.MaxPacketSize),
		MaxMessageExpiry: cfg.Broker.MaxMessageExpiry,
		MaxInflight:      uint16(cfg.Broker.MaxInflight),
		MaxWritesPending: int32(cfg.Broker.MaxWritesPending),
		MaxClients:       cfg.Broker.MaxClients,

		ConnectTimeout:     cfg.Broker.ConnectTimeout.Duration(),
		MaxConnectSize:     int(cfg.Broker.MaxConnectSize),
		MaxPendingConnects: int(cfg.Broker.MaxPendingConnects),
		MaxTopicLength:     int(cfg.Broker.MaxTopicLength),
		MaxQueuedBytes:     cfg.Broker.MaxQueuedBytes,
		MaxJSONDepth:       int(cfg.Broker.MaxJSONDepth),
		SlowClientTimeout:  cfg.Broker.SlowClientTimeout.Duration(),
		Device:             roleLimits(cfg.Broker.Limits["device"]),
		Skill:              roleLimits(cfg.Broker.Limits["skill"]),
		Integration:        roleLimits(cfg.Broker.Limits["integration"]),
		Operator:           roleLimits(cfg.Broker.Limits["operator"]),

		Logger: log.With("component", "broker"),
	}, nil
}

// roleLimits maps a role's broker.limits entry; zeros take the broker's defaults.
func roleLimits(l configs.RoleLimits) broker.RoleLimits {
	return broker.RoleLimits{
		Connections: int(l.Connections), PublishRate: l.PublishRate, PublishBurst: int(l.PublishBurst),
		MaxBusPayload: int(l.MaxBusPayload), Subscriptions: int(l.Subscriptions), MaxSessionExpiry: l.MaxSessionExpiry,
	}
}

func listenHTTP(cfg *configs.Config) (net.Listener, *tls.Config, error) {
	tlsCfg, err := cfg.HTTP.TLS.Config()
	if err != nil {
		return nil, nil, fmt.Errorf("http.tls: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("listen http on %s: %w", cfg.HTTP.Listen, err)
	}
	return ln, tlsCfg, nil
}

func httpURL(ln net.Listener, tlsCfg *tls.Config) string {
	if tlsCfg != nil {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}

// joinPin is the SHA-256 (hex) of the last certificate of the chain the
// HTTP server presents: the CA when http.tls.cert_file holds the chain
// (server.pem followed by ca.pem), else the server certificate itself
// (docs/security.md, "Join tokens"). Empty without TLS.
func joinPin(tlsCfg *tls.Config) string {
	if tlsCfg == nil || len(tlsCfg.Certificates) == 0 || len(tlsCfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	chain := tlsCfg.Certificates[0].Certificate
	sum := sha256.Sum256(chain[len(chain)-1])
	return hex.EncodeToString(sum[:])
}

func (m *Main) startHTTP(ln net.Listener, tlsCfg *tls.Config) error {
	hc := httpapi.Config{
		Listener: ln, TLS: tlsCfg, Version: m.cfg.Version, Logger: m.log.With("component", "http"),
		Fleet: m.fleet, Token: m.token, VerifyDevice: m.fleet.VerifyDevice, Metrics: m.fleet.Metrics(),
		Exports: m.exports, MQTT: m.health, Failing: m.failing,
	}
	if m.ext != nil {
		hc.BrokerAuth = m.ext.Auth()
	}
	var err error
	if m.dash, err = m.newDashboard(tlsCfg != nil); err != nil {
		return err
	}
	hc.UI = m.dash
	m.http, err = httpapi.Start(hc)
	return err
}

// mqttURL is what agents and up.json get.
func (m *Main) mqttURL() string {
	if m.ext != nil {
		return m.ext.URL()
	}
	return m.broker.URL()
}

func (m *Main) health() *api.MQTTHealth {
	if m.ext != nil {
		return &api.MQTTHealth{Broker: "external", URL: m.ext.URL()}
	}
	s := m.broker.Stats()
	h := &api.MQTTHealth{Clients: &s.ClientsConnected, Retained: &s.Retained}
	for _, l := range m.broker.Health().Listeners {
		h.Listeners = append(h.Listeners, api.ListenerHealth{ID: l.ID, Address: l.Address, Serving: l.Serving, Error: l.Error})
	}
	return h
}

// failing lists what does not work, for /healthz: the embedded broker's
// listeners, its in-process client (the controller publishes through it)
// and its store, and the fleet database.
func (m *Main) failing() []string {
	var out []string
	if m.broker != nil {
		out = m.broker.Health().Failing()
	}
	if m.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := m.store.Ping(ctx); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

func (m *Main) publish(msg broker.Message) error {
	if m.ext != nil {
		return m.ext.Publish(msg)
	}
	return m.broker.Publish(msg)
}

// setAvailability publishes the gateway's own retained availability.
func (m *Main) setAvailability(state string) {
	err := m.publish(broker.Message{Topic: topic.GatewayAvailability, Payload: []byte(state), QoS: 1, Retain: true})
	if err != nil {
		m.log.Warn("publish gateway availability", "error", err)
	}
}

// Close stops the gateway within 5 s: it announces it offline, then stops
// the HTTP API, the live sync, the controller, the store and the broker. It
// tolerates a partial start and is idempotent.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	if m.broker != nil || m.ext != nil {
		m.setAvailability("offline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var errs []error
	if m.dash != nil {
		errs = append(errs, m.dash.Close()) // ends its event streams, which Shutdown would wait for
	}
	if m.http != nil {
		errs = append(errs, m.http.Close(ctx))
	}
	if m.ext != nil {
		m.ext.CloseSync() // before the controller: see CloseSync
	}
	if m.fleet != nil {
		errs = append(errs, m.fleet.Close())
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	switch {
	case m.ext != nil:
		errs = append(errs, m.ext.Close())
	case m.broker != nil:
		errs = append(errs, m.broker.Close())
	}
	errs = append(errs, m.lock.Release())
	return errors.Join(errs...)
}

// Up is what up.json holds: the URLs and the local credentials.
func (m *Main) Up() configs.Up { return m.up }

// Token is the operator token of the HTTP API.
func (m *Main) Token() string { return m.token }

// DataDir is the gateway's data directory.
func (m *Main) DataDir() string { return m.cfg.Config.DataDir }

// Broker is the embedded broker; nil on an external broker.
func (m *Main) Broker() *broker.Broker { return m.broker }

// Fleet is the fleet controller.
func (m *Main) Fleet() *controller.Controller { return m.fleet }

// newDashboard is the operator's web console at / (docs/dashboard.md),
// reading through the controller and fed by its change feed.
func (m *Main) newDashboard(secure bool) (*dashboard.Dashboard, error) {
	return dashboard.New(dashboard.Config{
		Fleet:     m.fleet,
		Subscribe: func() (dashboard.Feed, func()) { return m.fleet.SubscribeChanges() },
		Birth: func(id string) (dashboard.Birth, bool) {
			b, ok := m.fleet.Birth(id)
			return dashboard.Birth{Hostname: b.Hostname, Arch: b.Arch, Isolation: b.Isolation}, ok
		},
		Enrolments: enrolments{m.fleet},
		Token:      m.token, Secure: secure, Version: m.cfg.Version, Logger: m.log.With("component", "dashboard"),
	})
}

// enrolments is the dashboard's view of the controller's pending list.
type enrolments struct{ c *controller.Controller }

func (e enrolments) ListPending(ctx context.Context) ([]dashboard.Pending, error) {
	ps, err := e.c.ListPending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.Pending, 0, len(ps))
	for _, p := range ps {
		out = append(out, dashboard.Pending{ID: p.ID, Device: p.DeviceID, Address: p.Address, Requested: p.CreatedAt, Accepted: p.Accepted})
	}
	return out, nil
}

func (e enrolments) Accept(ctx context.Context, actor, id string) error {
	_, err := e.c.AcceptPending(ctx, actor, id)
	return err
}

func (e enrolments) Reject(ctx context.Context, actor, id string) error {
	return e.c.RejectPending(ctx, actor, id)
}
