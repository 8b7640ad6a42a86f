package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// startFleet opens the fleet store, registers the local device (with `chorus
// up`) and starts the controller, which from then on owns the broker's auth
// table.
func (g *gatewayRun) startFleet(cfg configs.Config, accounts []broker.Account, device string) error {
	var err error
	if g.token, err = localauth.OperatorToken(cfg.DataDir); err != nil {
		return err
	}
	if g.store, err = sqlite.Open(filepath.Join(cfg.DataDir, "fleet.db"), nil); err != nil {
		return fmt.Errorf("open fleet store: %w", err)
	}
	ctx := context.Background()
	ver, _ := buildInfo()
	if device != "" && g.local.Device != nil {
		if err := registerLocalDevice(ctx, g.store, *g.local.Device); err != nil {
			return err
		}
	}
	g.fleet, err = controller.New(controller.Config{
		Store: g.store, Broker: g.fleetBroker(), LocalAccounts: accounts,
		ArtifactDir: filepath.Join(cfg.DataDir, "artifacts"), ValidateSkill: validateSkill,
		MQTTURL: g.up.MQTTURL, ServerURL: g.up.HTTPURL, Logger: g.a.log.With("component", "fleet"), BrokerStats: g.brokerStats(),
		HomeAssistant: controller.HomeAssistant{Disabled: !cfg.HomeAssistant.Enabled, Prefix: cfg.HomeAssistant.Prefix, Version: ver},
		Bridge: controller.Bridge{Twins: cfg.Bridge.Twins, TwinsByDevice: cfg.Bridge.TwinsByDevice,
			Grace: cfg.Bridge.Grace.Duration(), Hold: cfg.Bridge.Hold, Rate: cfg.Bridge.Rate, Burst: cfg.Bridge.Burst},
	})
	if err != nil {
		return err
	}
	if err := g.startDynsecSync(ctx); err != nil {
		return err
	}
	return g.fleet.Start(ctx)
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

// validateSkill checks an unpacked archive with the agent's own discovery
// rules, so the fleet never publishes a skill an agent would refuse.
func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description,
		Requirements: s.Requirements}, nil
}
