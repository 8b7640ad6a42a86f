package mosquittosync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-edge/chorus/gateway/bus"
)

// reconcile reads the desired accounts and the plugin's state and sends the
// difference. It is idempotent: a failure part-way leaves a state the next
// reconcile finishes.
func (s *Syncer) reconcile() error {
	ctx, cancel := context.WithTimeout(s.ctx, 4*s.cfg.Timeout)
	defer cancel()
	// The secrets are read before the registry: a secret handed over after
	// its account was stored is then never pruned as unknown.
	secrets := s.secretsSnapshot()
	desired, err := s.cfg.Desired(ctx)
	if err != nil {
		return fmt.Errorf("read desired accounts: %w", err)
	}
	withSecrets(desired, secrets)
	rs, err := s.request(ctx, listCommands())
	if err != nil {
		return fmt.Errorf("list dynamic-security state: %w", err)
	}
	state, err := parseState(rs)
	if err != nil {
		return fmt.Errorf("list dynamic-security state: %w", err)
	}
	p := diff(desired, state, s.cfg.Self)
	s.report(p, desired)
	failed, err := s.apply(ctx, p.Commands)
	s.prune(secrets, desired, state, p.Set, failed)
	s.setReady(desired, p, failed)
	return err
}

// withSecrets gives each desired client without a password the plaintext
// handed over for its current secret, if any.
func withSecrets(desired []Client, secrets map[string]secret) {
	for i := range desired {
		if sec, ok := secrets[desired[i].Username]; ok && desired[i].Password == "" && sec.fp == desired[i].Fingerprint {
			desired[i].Password = sec.password
		}
	}
}

// apply sends cmds in batches and returns the usernames and roles of the
// commands the plugin refused.
func (s *Syncer) apply(ctx context.Context, cmds []Command) (map[string]bool, error) {
	failed := map[string]bool{}
	var errs []error
	for len(cmds) > 0 {
		n := min(len(cmds), s.cfg.Batch)
		batch := cmds[:n]
		cmds = cmds[n:]
		rs, err := s.request(ctx, batch)
		if err != nil {
			for _, c := range slices.Concat(batch, cmds) {
				failed[c.account()] = true
			}
			return failed, err
		}
		for i, r := range rs {
			if r.Error == "" || i >= len(batch) {
				continue
			}
			c := batch[i]
			failed[c.account()] = true
			errs = append(errs, fmt.Errorf("%s %s: %s", c.Command, c.Username+c.Rolename, r.Error))
		}
		if len(batch) > 0 {
			s.log.Debug("mosquitto dynamic-security commands applied", "commands", len(batch), "refused", len(errs))
		}
	}
	return failed, errors.Join(errs...)
}

// request sends cmds as one message and waits for the plugin's answer to it.
func (s *Syncer) request(ctx context.Context, cmds []Command) ([]Response, error) {
	s.seq++
	body, err := encode(s.seq, cmds)
	if err != nil {
		return nil, err
	}
	want := []byte(`"correlationData":"` + correlation(s.seq, 0) + `"`)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.cfg.Transport.Publish(ctx, bus.Packet{Topic: ControlTopic, Payload: body, QoS: 1}); err != nil {
		return nil, fmt.Errorf("publish to %s: %w", ControlTopic, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer on %s: %w", ResponseTopic, ctx.Err())
		case payload := <-s.resp:
			if !bytes.Contains(payload, want) {
				continue // an answer to an earlier, timed-out request
			}
			rs, err := decodeResponses(payload)
			if err != nil {
				return nil, err
			}
			if len(rs) != len(cmds) {
				return nil, fmt.Errorf("%d answers to %d commands", len(rs), len(cmds))
			}
			return rs, nil
		}
	}
}

// report logs what the plan cannot do, once per account and secret.
func (s *Syncer) report(p Plan, desired []Client) {
	fps := map[string]string{}
	for _, d := range desired {
		fps[d.Username] = d.Fingerprint
	}
	for _, u := range p.Missing {
		if s.warned[u] == fps[u] {
			continue
		}
		s.warned[u] = fps[u]
		s.log.Warn("account not in Mosquitto and its secret is no longer known: rotate it (chorus fleet device rotate) "+
			"or load a file export (chorus fleet export mosquitto --dynsec)", "username", u)
	}
	for _, u := range p.Stale {
		s.log.Warn("Mosquitto held a password of a replaced secret: client deleted; rotate the account again "+
			"or load a file export to let it in", "username", u)
	}
	for _, u := range p.Set {
		delete(s.warned, u)
	}
	if len(p.Commands) > 0 {
		s.log.Info("mosquitto dynamic-security sync", "commands", len(p.Commands), "passwords_set", strings.Join(p.Set, ","))
	}
}

// setReady records the clients the plugin now holds with their current
// password: every desired one but the missing, the stale and those a
// refused command names.
func (s *Syncer) setReady(desired []Client, p Plan, failed map[string]bool) {
	ready := make(map[string]bool, len(desired))
	for _, d := range desired {
		ready[d.Username] = !failed[d.Username]
	}
	for _, u := range slices.Concat(p.Missing, p.Stale) {
		ready[u] = false
	}
	s.mu.Lock()
	s.ready = ready
	s.mu.Unlock()
}

func (s *Syncer) secretsSnapshot() map[string]secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]secret, len(s.secrets))
	for u, sec := range s.secrets {
		out[u] = sec
	}
	return out
}

// prune forgets the secrets of the snapshot that the plugin now has, that
// a newer secret superseded, or whose account is gone. The plugin has a
// secret when no command about its account was refused in this pass and
// either the pass set it (set) or the listed state already held the client
// with the secret's fingerprint: a createClient whose answer was lost, or
// one applied in a pass where another command for the account was refused,
// is never set again, so without the second rule its plaintext would stay
// in memory for good. A secret handed over since the snapshot is kept.
func (s *Syncer) prune(snapshot map[string]secret, desired []Client, state State, set []string, failed map[string]bool) {
	fps := map[string]string{}
	for _, d := range desired {
		fps[d.Username] = d.Fingerprint
	}
	held := map[string]bool{}
	for _, u := range set {
		held[u] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, sec := range snapshot {
		fp, ok := fps[u]
		pushed := !failed[u] && (held[u] || state.holds(u, sec.fp))
		if cur, still := s.secrets[u]; still && cur == sec && (!ok || fp != sec.fp || pushed) {
			delete(s.secrets, u)
		}
	}
}
