package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// Enrolment with join tokens (docs/security.md, "Join tokens"; issue 16):
// an operator makes a token, a satellite joins with it over HTTP and either
// gets its credentials at once (an --approve token) or waits in the pending
// list, in no broker table, until an operator accepts or rejects it.

// CreateJoinToken makes a join token for uses enrolments (0 = 1) within
// ttl (0 = fleet.DefaultJoinTokenTTL) giving the devices tags; approve
// lets them in without an operator's accept.
func (c *Controller) CreateJoinToken(ctx context.Context, actor string, tags []string, uses int, ttl time.Duration, approve bool) (fleet.IssuedJoinToken, error) {
	if uses == 0 {
		uses = 1
	}
	if ttl == 0 {
		ttl = fleet.DefaultJoinTokenTTL
	}
	if ttl < time.Second || ttl > fleet.MaxJoinTokenTTL {
		return fleet.IssuedJoinToken{}, fleet.Errorf(fleet.EINVALID, "ttl %s: want 1s to %s (e.g. --ttl 24h)", ttl, fleet.MaxJoinTokenTTL)
	}
	if c.cfg.ServerURL == "" {
		return fleet.IssuedJoinToken{}, fleet.Errorf(fleet.EINVALID, "this gateway has no HTTP URL to put in a join token")
	}
	id, err := randomID("jt-", 5)
	if err != nil {
		return fleet.IssuedJoinToken{}, err
	}
	secret, err := broker.NewSecret()
	if err != nil {
		return fleet.IssuedJoinToken{}, err
	}
	t := &fleet.JoinToken{ID: id, SecretHash: broker.HashSecret(secret), Tags: tags, Uses: uses, Approve: approve,
		ExpiresAt: c.cfg.Now().Add(ttl).UTC()}
	if err := c.store.CreateJoinToken(ctx, t); err != nil {
		return fleet.IssuedJoinToken{}, err
	}
	c.audit(ctx, actor, "token.create", "join-token/"+id, map[string]any{
		"tags": t.Tags, "uses": t.Uses, "approve": t.Approve, "expires_at": t.ExpiresAt})
	return fleet.IssuedJoinToken{Token: t, Secret: secret, URL: c.cfg.ServerURL, CAPin: c.cfg.JoinCAPin}, nil
}

// ListJoinTokens returns every token, revoked and used-up ones included.
func (c *Controller) ListJoinTokens(ctx context.Context) ([]*fleet.JoinToken, error) {
	return c.store.ListJoinTokens(ctx)
}

// RevokeJoinToken stops a token from enrolling anything more. Devices it
// already put in the pending list stay there for the operator to decide.
func (c *Controller) RevokeJoinToken(ctx context.Context, actor, id string) (*fleet.JoinToken, error) {
	t, err := c.store.RevokeJoinToken(ctx, id)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "token.revoke", "join-token/"+id, nil)
	return t, nil
}

// Join enrols device with the token tokenID and its secret, from address.
// A wrong id or secret is EUNAUTHORIZED and says nothing about the token;
// an unusable token, a taken device id or a failed enrolment change nothing
// (a use taken for a failed enrolment is given back).
func (c *Controller) Join(ctx context.Context, address, tokenID, secret, device string) (fleet.JoinResult, error) {
	if err := fleet.ValidDeviceID(device); err != nil {
		return fleet.JoinResult{}, fleet.Errorf(fleet.EINVALID, "%s: choose another name with --device", fleet.ErrorMessage(err))
	}
	t, err := c.store.GetJoinToken(ctx, tokenID)
	if err != nil || !secretMatches(t.SecretHash, secret) {
		if err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND {
			return fleet.JoinResult{}, err
		}
		return fleet.JoinResult{}, fleet.Errorf(fleet.EUNAUTHORIZED, "join token not recognised: check that it was copied whole, or ask the operator for a new one (chorus fleet token create)")
	}
	if err := c.deviceFree(ctx, device); err != nil {
		return fleet.JoinResult{}, err
	}
	if t, err = c.store.UseJoinToken(ctx, t.ID); err != nil {
		return fleet.JoinResult{}, err
	}
	actor := "join-token:" + t.ID
	res, err := c.admit(ctx, actor, t, address, device)
	if err != nil {
		if rerr := c.store.RefundJoinToken(ctx, t.ID); rerr != nil {
			c.log.Error("give back a join token's use", "token", t.ID, "error", rerr)
		}
		return fleet.JoinResult{}, err
	}
	return res, nil
}

// deviceFree refuses a device id the registry already holds.
func (c *Controller) deviceFree(ctx context.Context, device string) error {
	_, err := c.store.GetDevice(ctx, device)
	switch {
	case err == nil:
		return fleet.Errorf(fleet.ECONFLICT, "device %q is already in the fleet: join with another name (--device NAME), or have the operator remove the old one first (chorus fleet device rm %s)", device, device)
	case fleet.ErrorCode(err) == fleet.ENOTFOUND:
		return nil
	}
	return err
}

// admit adds the device at once (an --approve token) or puts it in the
// pending list.
func (c *Controller) admit(ctx context.Context, actor string, t *fleet.JoinToken, address, device string) (fleet.JoinResult, error) {
	if t.Approve {
		_, creds, err := c.AddDevice(ctx, actor, device, t.Tags)
		if err != nil {
			return fleet.JoinResult{}, err
		}
		c.audit(ctx, actor, "device.join", "device/"+device, map[string]any{"token": t.ID, "address": address, "approved": true})
		return fleet.JoinResult{Credentials: &creds}, nil
	}
	id, err := randomID("p-", 5)
	if err != nil {
		return fleet.JoinResult{}, err
	}
	poll, err := broker.NewSecret()
	if err != nil {
		return fleet.JoinResult{}, err
	}
	p := &fleet.PendingDevice{ID: id, DeviceID: device, Tags: t.Tags, TokenID: t.ID, Address: address, SecretHash: broker.HashSecret(poll)}
	if err := c.store.CreatePending(ctx, p); err != nil {
		return fleet.JoinResult{}, err
	}
	c.audit(ctx, actor, "device.pending", "pending/"+id, map[string]any{"device": device, "token": t.ID, "address": address})
	return fleet.JoinResult{Pending: p, PollSecret: poll}, nil
}

// RecollectWindow is how long after collecting its credentials an agent may
// collect them again, as long as its device has not been heard from since:
// a reply lost on the way (a dropped connection, a timeout) must not strand
// a device the operator accepted. Each collection issues fresh credentials,
// so only the latest works.
const RecollectWindow = 10 * time.Minute

// PollJoin is a pending agent asking whether it was accepted: pending, or
// its credentials. The entry ends once the device is heard from, or
// RecollectWindow after the last collection. A rejected entry is gone:
// ENOTFOUND.
func (c *Controller) PollJoin(ctx context.Context, id, secret string) (fleet.JoinResult, error) {
	c.joinMu.Lock()
	defer c.joinMu.Unlock()
	p, err := c.store.GetPending(ctx, id)
	if fleet.ErrorCode(err) == fleet.ENOTFOUND {
		return fleet.JoinResult{}, errNotWaiting(id)
	}
	if err != nil {
		return fleet.JoinResult{}, err
	}
	if !secretMatches(p.SecretHash, secret) {
		return fleet.JoinResult{}, fleet.Errorf(fleet.EUNAUTHORIZED, "wrong poll secret for enrolment %s", id)
	}
	if !p.Accepted {
		return fleet.JoinResult{Pending: p}, nil
	}
	if !p.CollectedAt.IsZero() {
		if err := c.mayRecollect(ctx, p); err != nil {
			return fleet.JoinResult{}, err
		}
	}
	creds, err := c.issueJoined(ctx, p)
	if err != nil {
		return fleet.JoinResult{}, err
	}
	return fleet.JoinResult{Credentials: &creds}, nil
}

func errNotWaiting(id string) error {
	return fleet.Errorf(fleet.ENOTFOUND, "enrolment %s is not waiting: it was rejected, its device was removed, or its credentials were collected and used; ask the operator, and join again with a new token", id)
}

// mayRecollect allows a second collection within RecollectWindow while the
// device has not been heard from; otherwise it ends the entry and says so.
func (c *Controller) mayRecollect(ctx context.Context, p *fleet.PendingDevice) error {
	d, err := c.GetDevice(ctx, p.DeviceID) // LastSeen is now while it is connected
	// Heard from, ever: the device was made at accept and never seen, so
	// any presence, or a live connection under its name now, came with
	// collected credentials. No clock is compared, so a clock stepped back
	// (a Pi without an RTC) cannot reopen the entry.
	used := err == nil && (!d.LastSeen.IsZero() || c.live.on() && c.live.connected(p.DeviceID))
	if err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND {
		return err
	}
	age := c.cfg.Now().Sub(p.CollectedAt)
	if !used && err == nil && age >= 0 && age < RecollectWindow {
		return nil
	}
	if derr := c.store.DeletePending(ctx, p.ID); derr != nil && fleet.ErrorCode(derr) != fleet.ENOTFOUND {
		return derr
	}
	return errNotWaiting(p.ID)
}

// issueJoined gives an accepted device fresh credentials (the ones made at
// accept, or at an earlier collection, stop working) and records the
// collection. The caller holds joinMu.
func (c *Controller) issueJoined(ctx context.Context, p *fleet.PendingDevice) (configs.AgentCredentials, error) {
	secret, priv, err := newDeviceSecrets()
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	d, err := c.store.RotateDevice(ctx, p.DeviceID, broker.HashSecret(secret), priv.Public().(ed25519.PublicKey))
	if err != nil {
		if fleet.ErrorCode(err) == fleet.ENOTFOUND {
			_ = c.store.DeletePending(ctx, p.ID)
			return configs.AgentCredentials{}, fleet.Errorf(fleet.ENOTFOUND, "device %s was removed after it was accepted: ask the operator, and join again with a new token", p.DeviceID)
		}
		return configs.AgentCredentials{}, err
	}
	if _, err := c.store.CollectPending(ctx, p.ID); err != nil {
		return configs.AgentCredentials{}, err
	}
	actor := "join-token:" + p.TokenID
	c.audit(ctx, actor, "device.join", "device/"+p.DeviceID, map[string]any{"token": p.TokenID, "address": p.Address, "pending": p.ID, "again": !p.CollectedAt.IsZero()})
	_ = c.registryChanged(ctx)
	creds := c.credentials(d, secret, priv)
	c.cfg.SecretIssued(ctx, creds.Username, secret)
	return creds, nil
}

// ListPending returns the devices waiting for an operator, oldest first.
func (c *Controller) ListPending(ctx context.Context) ([]*fleet.PendingDevice, error) {
	return c.store.ListPending(ctx)
}

// AcceptPending adds a pending device to the fleet (with its token's tags)
// and marks the entry accepted; the agent collects its credentials on its
// next poll. Accepting twice answers the device again.
func (c *Controller) AcceptPending(ctx context.Context, actor, id string) (*fleet.Device, error) {
	c.joinMu.Lock()
	defer c.joinMu.Unlock()
	p, err := c.store.GetPending(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Accepted {
		return c.store.GetDevice(ctx, p.DeviceID)
	}
	d, _, err := c.AddDevice(ctx, actor, p.DeviceID, p.Tags)
	if err != nil {
		if fleet.ErrorCode(err) == fleet.ECONFLICT {
			return nil, fleet.Errorf(fleet.ECONFLICT, "device %q is already in the fleet: reject this enrolment (chorus fleet device reject %s), or remove the device first", p.DeviceID, id)
		}
		return nil, err
	}
	if _, err := c.store.AcceptPending(ctx, id); err != nil {
		// The entry is gone (the device was removed meanwhile) or the store
		// failed: undo the device, which no agent could ever collect.
		if rerr := c.store.DeleteDevice(ctx, p.DeviceID); rerr != nil && fleet.ErrorCode(rerr) != fleet.ENOTFOUND {
			c.log.Error("accept failed and the device it added was not removed: remove it (chorus fleet device rm)", "device", p.DeviceID, "err", rerr)
		}
		_ = c.registryChanged(ctx)
		return nil, err
	}
	c.audit(ctx, actor, "device.accept", "pending/"+id, map[string]any{"device": p.DeviceID, "token": p.TokenID})
	return d, nil
}

// RejectPending drops a pending device; its agent's next poll learns it.
func (c *Controller) RejectPending(ctx context.Context, actor, id string) error {
	c.joinMu.Lock()
	defer c.joinMu.Unlock()
	p, err := c.store.GetPending(ctx, id)
	if err != nil {
		return err
	}
	if p.Accepted {
		return fleet.Errorf(fleet.ECONFLICT, "enrolment %s was already accepted as device %s: remove the device instead (chorus fleet device rm %s)", id, p.DeviceID, p.DeviceID)
	}
	if err := c.store.DeletePending(ctx, id); err != nil {
		return err
	}
	c.audit(ctx, actor, "device.reject", "pending/"+id, map[string]any{"device": p.DeviceID, "token": p.TokenID, "address": p.Address})
	return nil
}

// randomID is prefix and 2n random hex digits.
func randomID(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate id: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

// secretMatches compares a secret with its stored hash in constant time.
func secretMatches(hash, secret string) bool {
	want := broker.HashSecret(secret)
	return len(hash) == len(want) && subtle.ConstantTimeCompare([]byte(hash), []byte(want)) == 1
}
