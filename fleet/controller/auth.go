package controller

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
)

// tableBox holds the last auth table the controller built.
type tableBox struct{ p atomic.Pointer[broker.Table] }

// rebuildTable builds the broker's auth table from the registry (devices
// with their skill keys, integrations, operators) plus LocalAccounts and
// installs it; the broker disconnects clients whose credentials vanished.
// tableMu serialises rebuilds, so the table installed last was read last.
func (c *Controller) rebuildTable(ctx context.Context) error {
	c.tableMu.Lock()
	defer c.tableMu.Unlock()
	accts, err := c.Accounts(ctx)
	if err != nil {
		return fmt.Errorf("rebuild auth table: %w", err)
	}
	t, err := broker.NewTable(accts...)
	if err != nil {
		return fmt.Errorf("rebuild auth table: %w", err)
	}
	c.cfg.Broker.SetTable(t)
	c.table.p.Store(t)
	return nil
}

// Accounts lists the accounts of the broker's auth table as the registry
// holds them now: every device (with its skills' grants), integration and
// operator, plus the LocalAccounts no registry account shadows. The
// Mosquitto exports and the live sync (fleet/external) render this list.
func (c *Controller) Accounts(ctx context.Context) ([]broker.Account, error) {
	accts, err := c.registryAccounts(ctx)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(accts))
	for _, a := range accts {
		seen[a.Username] = true
	}
	for _, a := range c.cfg.LocalAccounts {
		if !seen[a.Username] { // a registry account shadows a local one
			accts = append(accts, a)
		}
	}
	return accts, nil
}

func (c *Controller) registryAccounts(ctx context.Context) ([]broker.Account, error) {
	devs, err := c.store.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		return nil, err
	}
	ints, err := c.store.ListIntegrations(ctx)
	if err != nil {
		return nil, err
	}
	ops, err := c.store.ListOperators(ctx)
	if err != nil {
		return nil, err
	}
	grants, err := c.store.ListSkillGrants(ctx)
	if err != nil {
		return nil, err
	}
	accts := make([]broker.Account, 0, len(devs)+len(ints)+len(ops)+len(c.cfg.LocalAccounts))
	for _, d := range devs {
		a := broker.DeviceAccount(d.ID, d.SecretHash, d.SkillKey, d.KeyVersion)
		a.SkillGrants = skillGrantsOf(grants, d.ID)
		accts = append(accts, a)
	}
	for _, i := range ints {
		accts = append(accts, broker.IntegrationAccount(i.Name, i.SecretHash, i.Allow...))
	}
	for _, o := range ops {
		accts = append(accts, broker.OperatorAccount(o.Name, o.SecretHash))
	}
	return accts, nil
}

// VerifyDevice reports whether username and password are a device's own
// MQTT credentials (the artifact download's Basic auth). It reads the
// in-memory table: one SHA-256 and a constant-time compare, no database.
func (c *Controller) VerifyDevice(username, password string) bool {
	t := c.table.p.Load()
	if t == nil {
		return false
	}
	a, err := t.Authenticate(username, []byte(password))
	return err == nil && a.Role == broker.RoleDevice
}

// registryChanged rebuilds the table after a registry change; a failure is
// logged and returned (the change is stored; the next rebuild fixes the table).
func (c *Controller) registryChanged(ctx context.Context) error {
	if err := c.rebuildTable(ctx); err != nil {
		c.log.Error("auth table not rebuilt", "error", err)
		return err
	}
	return nil
}
