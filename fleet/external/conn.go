package external

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/mosquittosync"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Config configures Dial: the gateway on an external MQTT 5 broker
// (`chorus gateway --broker external`). URL is required.
type Config struct {
	URL      string // mqtt://, mqtts://, ws://, wss://; agents get it in their credentials
	Username string // the controller's account on the broker ("controller")
	Password string
	// AuthSecret is the shared secret of the EMQX-shaped HTTP auth
	// endpoints; empty turns them off.
	AuthSecret string
	// DynSec keeps Mosquitto's dynamic-security clients, roles and groups in
	// step with the registry over $CONTROL/dynamic-security/v1, on a second
	// connection (--mosquitto-dynsec).
	DynSec bool
	Logger *slog.Logger
}

// Conn is the gateway's connection to an external broker: the controller's
// broker, the gateway's own publishes, the HTTP auth decisions and, with
// DynSec, the live sync.
type Conn struct {
	cfg     Config
	mqtt    *bus.MQTT
	adapter *Adapter

	sync      *mosquittosync.Syncer // nil without DynSec
	syncMQTT  *bus.MQTT
	desired   func(context.Context) ([]mosquittosync.Client, error) // set by StartSync, read by the sync's goroutine after
	syncClose sync.Once
}

// Dial connects as the controller, with the gateway's availability
// "offline" as its Will, and with DynSec also the sync's connection (not yet
// started: StartSync starts it once the fleet store is open).
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	offline := &bus.Packet{Topic: topic.GatewayAvailability, Payload: []byte("offline"), QoS: 1, Retain: true}
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: cfg.URL, Username: cfg.Username, Password: cfg.Password,
		ClientID: "chorus-controller", Will: offline, SessionExpiry: 0, CleanStart: true,
		Logger: cfg.Logger.With("component", "mqtt")})
	if err != nil {
		return nil, fmt.Errorf("external broker: %w", err)
	}
	c := &Conn{cfg: cfg, mqtt: m, adapter: New(m)}
	if cfg.DynSec {
		if err := c.dialSync(ctx); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *Conn) dialSync(ctx context.Context) error {
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: c.cfg.URL, Username: c.cfg.Username, Password: c.cfg.Password,
		ClientID: "chorus-dynsec", CleanStart: true, Logger: c.cfg.Logger.With("component", "mqtt-dynsec")})
	if err != nil {
		return fmt.Errorf("mosquitto dynamic-security sync: %w", err)
	}
	s, err := mosquittosync.New(mosquittosync.Config{
		Transport: m, Self: c.cfg.Username, TriggerTopics: DynSecTriggers,
		Desired: func(ctx context.Context) ([]mosquittosync.Client, error) { return c.desired(ctx) },
		Logger:  c.cfg.Logger.With("component", "mosquitto-sync"),
	})
	if err != nil {
		_ = m.Close()
		return err
	}
	c.sync, c.syncMQTT = s, m
	return nil
}

// URL is the broker's URL, which agents get.
func (c *Conn) URL() string { return c.cfg.URL }

// Broker is the controller's broker: the adapter, whose desired documents
// wait for their skills' clients while the live sync runs.
func (c *Conn) Broker() controller.Broker {
	if c.sync != nil {
		return SyncedAdapter{Adapter: c.adapter, Sync: c.sync, Log: c.cfg.Logger.With("component", "mosquitto-sync")}
	}
	return c.adapter
}

// Publish sends the gateway's own message (its availability).
func (c *Conn) Publish(m broker.Message) error { return c.adapter.Publish(m) }

// Sync is the live dynamic-security sync, nil without DynSec.
func (c *Conn) Sync() *mosquittosync.Syncer { return c.sync }

// Auth takes the broker's HTTP auth decisions from the table the controller
// last installed, with the controller's own account as the superuser.
func (c *Conn) Auth() Auth {
	return Auth{Table: c.adapter.Table, Super: c.Superuser(), HTTPSecret: c.cfg.AuthSecret}
}

// Superuser is the controller's own account on the broker.
func (c *Conn) Superuser() Superuser {
	return Superuser{Username: c.cfg.Username, Password: c.cfg.Password}
}

// StartSync starts the live sync, if on, with desired listing the clients
// Mosquitto should hold (Exporter.DynSecClients). Call it once the store is
// open and before the controller publishes its first desired documents,
// which wait for the sync (SyncedAdapter.Publish).
func (c *Conn) StartSync(ctx context.Context, desired func(context.Context) ([]mosquittosync.Client, error)) error {
	if c.sync == nil {
		return nil
	}
	c.desired = desired
	return c.sync.Start(ctx)
}

// CloseSync stops the live sync and its connection. Stop it before the
// controller: a reconcile worker waiting for it to create a skill's client
// is released at once instead of running out its wait. It is idempotent.
func (c *Conn) CloseSync() {
	if c.sync == nil {
		return
	}
	c.syncClose.Do(func() {
		c.sync.Close()
		_ = c.syncMQTT.Close()
	})
}

// Close stops the sync and closes the controller's connection.
func (c *Conn) Close() error {
	c.CloseSync()
	return c.mqtt.Close()
}
