package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// AddDevice registers a device with a random secret (stored hashed) and a
// fresh Ed25519 skill key (public half stored) and returns its agent
// credentials: the only time the secret and the private key are shown.
// When the store cannot say whether the device was stored (a failed
// COMMIT, then a failed read-back), it returns the error (unavailable) and
// the credentials too, so that the secret of a device that was stored is
// not lost; they work exactly when the device turns out to exist.
func (c *Controller) AddDevice(ctx context.Context, actor, id string, tags []string) (*fleet.Device, configs.AgentCredentials, error) {
	secret, priv, err := newDeviceSecrets()
	if err != nil {
		return nil, configs.AgentCredentials{}, err
	}
	d := &fleet.Device{ID: id, Tags: tags, SecretHash: broker.HashSecret(secret), SkillKey: priv.Public().(ed25519.PublicKey)}
	if err := c.store.CreateDevice(ctx, d); err != nil {
		stored, err := c.storedAnyway(ctx, d, err)
		if errors.Is(err, errOutcomeUnknown) {
			// If it was stored, its credentials work as soon as the table
			// is rebuilt from the registry (a failing read keeps the old one).
			_ = c.registryChanged(ctx)
			c.queue.Add(id)
			return nil, c.credentials(d, secret, priv), err
		}
		if err != nil {
			return nil, configs.AgentCredentials{}, err
		}
		d = stored
	}
	c.audit(ctx, actor, "device.add", "device/"+id, map[string]any{"tags": d.Tags})
	_ = c.registryChanged(ctx)
	c.queue.Add(id) // publishes its first desired document
	creds := c.credentials(d, secret, priv)
	c.cfg.SecretIssued(ctx, creds.Username, secret)
	return d, creds, nil
}

// storedAnyway settles a create the store refused as unavailable: a write
// that failed at COMMIT (a full disk) may have reached the database, and a
// device stored without its one-time secret reaching the operator is locked
// out (a retry says it exists). It reads the device back: stored with this
// secret's hash, the create succeeded and d is returned; absent, the answer
// says for certain that nothing changed. Only when the read fails too does
// the store's own error (which says the outcome is unknown) go back.
func (c *Controller) storedAnyway(ctx context.Context, d *fleet.Device, err error) (*fleet.Device, error) {
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE {
		return nil, err
	}
	got, gerr := c.store.GetDevice(ctx, d.ID)
	switch {
	case gerr == nil && got.SecretHash == d.SecretHash:
		c.log.Warn("device add: the store reported a failure but the device was stored; returning its credentials",
			"device", d.ID, "error", err)
		return got, nil
	case fleet.ErrorCode(gerr) == fleet.ENOTFOUND:
		return nil, fmt.Errorf("%w: %w", fleet.Errorf(fleet.EUNAVAILABLE,
			"the fleet database could not store device %q (a full disk, a file size limit or a failing disk; see the gateway's log); read back after the failure, it is not there: nothing changed; free space on the gateway and retry",
			d.ID), err)
	default:
		c.log.Error("device add: the store reported a failure and the device cannot be read back; returning its credentials in case it was stored",
			"device", d.ID, "error", err, "read_error", gerr)
		return nil, fmt.Errorf("%w: %w", err, errOutcomeUnknown)
	}
}

// errOutcomeUnknown marks an add whose outcome the store cannot confirm.
var errOutcomeUnknown = errors.New("outcome unknown")

// RotateDevice replaces a device's secret and skill key; the old ones stop
// working at once (connected clients using them are disconnected).
func (c *Controller) RotateDevice(ctx context.Context, actor, id string) (*fleet.Device, configs.AgentCredentials, error) {
	secret, priv, err := newDeviceSecrets()
	if err != nil {
		return nil, configs.AgentCredentials{}, err
	}
	d, err := c.store.RotateDevice(ctx, id, broker.HashSecret(secret), priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, configs.AgentCredentials{}, err
	}
	c.audit(ctx, actor, "device.rotate", "device/"+id, map[string]any{"key_version": d.KeyVersion})
	_ = c.registryChanged(ctx)
	creds := c.credentials(d, secret, priv)
	c.cfg.SecretIssued(ctx, creds.Username, secret)
	return d, creds, nil
}

// RemoveDevice deletes a device (its device assignments go, its unfinished
// executions are canceled), revokes it at once and clears its retained
// topics: its Home Assistant config first (HA then drops the entities with
// the device, never seeing them without availability), then its state and
// desired topics. The clears are sent once. A crash before they reach the
// broker is repaired at the next start (sweep.go re-derives them from the
// registry).
//
// A Reconcile of the device may be running with what it loaded before the
// delete, and remember or publish after the forget and the clears here.
// The device is queued again: the work queue runs that pass after the
// running one, finds the device gone and clears what that pass published
// (Reconcile, removed).
func (c *Controller) RemoveDevice(ctx context.Context, actor, id string) error {
	if err := c.store.DeleteDevice(ctx, id); err != nil {
		return err
	}
	c.removals.Add(1) // before removeHA below (reconcileHA)
	c.audit(ctx, actor, "device.remove", "device/"+id, nil)
	err := c.registryChanged(ctx)
	c.forget(id)
	c.routesChanged(ctx) // before clearTopics: the relay still knows its skills
	c.removeHA(id)
	c.clearTopics(id)
	c.queue.Add(id)
	c.Kick()
	return err
}

// clearTopics publishes empty retained payloads on the device's state and
// desired topics. A Will the broker publishes after this is cleared again by
// the inbox (clearStale), since the device is no longer in the registry.
func (c *Controller) clearTopics(id string) {
	for _, build := range []func(string) (string, error){topic.Availability, topic.Birth, topic.Connectivity, topic.Skills, topic.Desired} {
		c.clearTopic(build, id)
	}
}

func (c *Controller) clearTopic(build func(string) (string, error), id string) {
	t, err := build(id)
	if err != nil {
		return
	}
	if err := c.cfg.Broker.Publish(broker.Message{Topic: t, QoS: 1, Retain: true}); err != nil {
		c.log.Warn("clear retained topic", "topic", t, "error", err)
	}
}

// SetTags replaces a device's tags and recomputes its desired document: a
// device that joins a tag gets that tag's skills.
func (c *Controller) SetTags(ctx context.Context, actor, id string, tags []string) (*fleet.Device, error) {
	if err := fleet.ValidTags(tags); err != nil {
		return nil, err
	}
	d, err := c.store.SetDeviceTags(ctx, id, tags)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "device.tag", "device/"+id, map[string]any{"tags": d.Tags})
	c.queue.Add(id)
	return d, nil
}

// GetDevice returns one device.
func (c *Controller) GetDevice(ctx context.Context, id string) (*fleet.Device, error) {
	d, err := c.store.GetDevice(ctx, id)
	if err == nil {
		c.heardNow(d)
	}
	return d, err
}

// ListDevices returns the devices f selects.
func (c *Controller) ListDevices(ctx context.Context, f fleet.DeviceFilter) ([]*fleet.Device, error) {
	if f.Tag != "" {
		if err := fleet.ValidTag(f.Tag); err != nil {
			return nil, err
		}
	}
	ds, err := c.store.ListDevices(ctx, f)
	if err == nil {
		c.heardNow(ds...)
	}
	return ds, err
}

// heardNow sets LastSeen to now for each online device whose agent holds a
// live connection: the broker hears it (its keepalive) for as long as that
// lasts. An offline device keeps the time its connection closed
// (liveness.go); without live connections (an external broker) LastSeen is
// the last availability or birth (docs/topics.md, Presence).
func (c *Controller) heardNow(ds ...*fleet.Device) {
	if !c.live.on() {
		return
	}
	now := c.cfg.Now()
	for _, d := range ds {
		if d != nil && d.Online && c.live.connected(d.ID) {
			d.LastSeen = now
		}
	}
}

// DesiredOf returns the device's current desired document.
func (c *Controller) DesiredOf(ctx context.Context, id string) (fleet.Desired, error) {
	return c.store.DesiredFor(ctx, id)
}

func (c *Controller) credentials(d *fleet.Device, secret string, priv ed25519.PrivateKey) configs.AgentCredentials {
	return configs.AgentCredentials{
		Device: d.ID, MQTTURL: c.cfg.MQTTURL, ServerURL: c.cfg.ServerURL,
		Username: d.ID, Password: secret, SkillKey: configs.EncodeSkillKey(priv), KeyVersion: d.KeyVersion,
	}
}

func newDeviceSecrets() (string, ed25519.PrivateKey, error) {
	secret, err := broker.NewSecret()
	if err != nil {
		return "", nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, fmt.Errorf("generate device key: %w", err)
	}
	return secret, priv, nil
}
