package broker

import "testing"

// HasRetained reports whether a retained message is held for topic (tests only).
func (b *Broker) HasRetained(topic string) bool {
	_, ok := b.srv.Topics.Retained.Get(topic)
	return ok
}

// TrackedSessions counts the connections the policy holds state for (tests only).
func (b *Broker) TrackedSessions() int { return b.policy.sessionCount() }

// TrackedAccounts counts the accounts the policy holds a bucket for (tests only).
func (b *Broker) TrackedAccounts() int { return b.policy.accounts.len() }

// SweepPolicy runs the policy's periodic sweep now (tests only).
func (b *Broker) SweepPolicy() { b.policy.OnSysInfoTick(nil) }

// Inflight returns the number of QoS messages in flight for a client id (-1: unknown).
func (b *Broker) Inflight(clientID string) int {
	cl, ok := b.srv.Clients.Get(clientID)
	if !ok {
		return -1
	}
	return cl.State.Inflight.Len()
}

// StoredKeys lists the row keys of the broker store in dir (tests only).
func StoredKeys(t *testing.T, dir string) []string { return storedKeysIn(t, dir) }
