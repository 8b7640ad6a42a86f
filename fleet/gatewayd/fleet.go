package gatewayd

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/external"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// startFleet opens the fleet store, registers the local device (with `chorus
// up`), starts the live sync on an external Mosquitto and then the
// controller, which from then on owns the broker's auth table.
func (m *Main) startFleet(ctx context.Context, accounts []broker.Account, device string) error {
	cfg := m.cfg.Config
	var err error
	if m.token, err = localauth.OperatorToken(cfg.DataDir); err != nil {
		return err
	}
	if m.store, err = sqlite.Open(filepath.Join(cfg.DataDir, "fleet.db"), nil); err != nil {
		return fmt.Errorf("open fleet store: %w", err)
	}
	if device != "" && m.local.Device != nil {
		if err := registerLocalDevice(ctx, m.store, *m.local.Device); err != nil {
			return err
		}
	}
	m.exports = m.newExporter()
	var conns controller.Connections
	if m.broker != nil { // an external broker's connections are not seen: presence follows its messages
		conns = m.broker
	}
	m.fleet, err = controller.New(controller.Config{
		Connections: conns, PresenceGrace: cfg.Presence.Grace.Duration(),
		Store: m.store, Broker: m.controllerBroker(), LocalAccounts: accounts,
		ArtifactDir: filepath.Join(cfg.DataDir, "artifacts"), ValidateSkill: m.cfg.ValidateSkill,
		MQTTURL: m.up.AdvertiseMQTTURL, ServerURL: m.up.AdvertiseHTTPURL, JoinCAPin: m.joinPin, Logger: m.log.With("component", "fleet"), BrokerStats: m.brokerStats(),
		HomeAssistant: controller.HomeAssistant{Disabled: !cfg.HomeAssistant.Enabled, Prefix: cfg.HomeAssistant.Prefix, Version: m.cfg.Version},
		Bridge: controller.Bridge{Twins: cfg.Bridge.Twins, TwinsByDevice: cfg.Bridge.TwinsByDevice,
			Grace: cfg.Bridge.Grace.Duration(), Hold: cfg.Bridge.Hold, Rate: cfg.Bridge.Rate, Burst: cfg.Bridge.Burst},
		SecretIssued: m.exports.SecretIssued, SweepWait: m.sweepWait(),
	})
	if err != nil {
		return err
	}
	if m.ext != nil {
		if err := m.ext.StartSync(ctx, m.exports.DynSecClients); err != nil {
			return err
		}
	}
	return m.fleet.Start(ctx)
}

// newExporter renders the registry for Mosquitto: on any broker for the
// export endpoints, and on an external Mosquitto for the live sync.
func (m *Main) newExporter() *external.Exporter {
	xc := external.ExporterConfig{Store: m.store, Accounts: m.accounts, Local: m.localCredentials(),
		Logger: m.log.With("component", "export")}
	if m.ext != nil {
		xc.Super, xc.Sync = m.ext.Superuser(), m.ext.Sync()
	}
	return external.NewExporter(xc)
}

// accounts is the controller's account list, once it exists.
func (m *Main) accounts(ctx context.Context) ([]broker.Account, error) { return m.fleet.Accounts(ctx) }

func (m *Main) localCredentials() []configs.Credential {
	cs := []configs.Credential{m.local.Observer, m.local.Operator}
	if d := m.local.Device; d != nil {
		cs = append(cs, configs.Credential{Username: d.Username, Password: d.Password})
	}
	return cs
}

// controllerBroker is the controller's broker: the embedded one or the
// external connection's.
func (m *Main) controllerBroker() controller.Broker {
	if m.ext != nil {
		return m.ext.Broker()
	}
	return m.broker
}

// sweepWait is how long the controller's start-up sweep of removed devices
// listens for retained messages: an external broker sends them after its
// SUBACK, the embedded one within the subscribe.
func (m *Main) sweepWait() time.Duration {
	if m.ext != nil {
		return 5 * time.Second
	}
	return 0
}

// brokerStats is the embedded broker's counters for metrics; nil on an
// external broker, whose counters are its own.
func (m *Main) brokerStats() func() broker.Stats {
	if m.ext != nil {
		return nil
	}
	return m.broker.Stats
}

// registerLocalDevice makes the registry hold `chorus up`'s local device with
// its local credentials, replacing a stale entry of the same id.
func registerLocalDevice(ctx context.Context, st *sqlite.DB, c configs.AgentCredentials) error {
	key, err := c.PrivateKey()
	if err != nil {
		return fmt.Errorf("local device: %w", err)
	}
	pub := key.Public().(ed25519.PublicKey)
	hash := broker.HashSecret(c.Password)
	d, err := st.GetDevice(ctx, c.Device)
	switch {
	case err == nil && d.SecretHash == hash && ed25519.PublicKey(d.SkillKey).Equal(pub) && d.KeyVersion == c.KeyVersion:
		return nil
	case err == nil:
		if err := st.DeleteDevice(ctx, c.Device); err != nil {
			return fmt.Errorf("local device: %w", err)
		}
	case !errors.Is(err, fleet.ErrNotFound):
		return fmt.Errorf("local device: %w", err)
	}
	err = st.CreateDevice(ctx, &fleet.Device{ID: c.Device, Tags: []string{"local"}, SecretHash: hash, SkillKey: pub, KeyVersion: c.KeyVersion})
	if err != nil {
		return fmt.Errorf("register local device %s: %w", c.Device, err)
	}
	return nil
}
