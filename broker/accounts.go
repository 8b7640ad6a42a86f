package broker

import (
	"slices"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// session is what the policy knows about one authenticated connection. It is
// created in OnConnect and read on the packet path through policy.sessions.
type session struct {
	username string
	password []byte // to re-check the client when the table is replaced
	account  *accountState
	// expiry is the session expiry the client was given when the policy
	// lowered what it asked for (0 = not lowered), for the CONNACK.
	expiry  uint32
	lowered bool

	drops dropRun // messages dropped towards this client (slow.go)

	// refusedRun counts rate refusals in a row and flooding says the
	// client is read at its rate (ratelimit.go); only the client's read
	// goroutine (OnPublish) touches them.
	refusedRun int
	flooding   bool
}

// accountState is shared by the connections of one account: the publish
// rate bucket and the live connections counted against RoleLimits.Connections.
type accountState struct {
	bucket *bucket // nil: the role has no rate limit
	// conns holds each live connection once. A slice, not a set: a device
	// account has one or two connections, and a map of one cost a 48-byte
	// header and an 80-byte slot group per account (accounts.join 1.5 MB at
	// 10,000 devices) where a slice of one is 8 bytes. join already walks
	// every connection, so leave walking them too changes no order of cost.
	conns []*mqtt.Client
}

// accounts tracks the state of every account with a live connection, or
// whose bucket is still refilling after its last one left.
type accounts struct {
	mu     sync.Mutex // guards byName; nothing under it does I/O
	byName map[string]*accountState
}

// join adds cl, about to hold client id id, to username's connections
// unless the account already has limit live connections besides one with
// the same id (a reconnect that takes its own session over is not counted
// twice). limit < 0 means no limit. newBucket makes the account's bucket
// when the account is new. It returns the live connections counted.
func (as *accounts) join(username string, cl *mqtt.Client, id string, limit int, newBucket func() *bucket) (*accountState, int, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	st, ok := as.byName[username]
	if !ok {
		st = &accountState{bucket: newBucket()}
		as.byName[username] = st
	}
	st.dropClosed()
	live, joined := 0, false
	for _, c := range st.conns {
		if c == cl {
			joined = true
		}
		if c.ID != id {
			live++
		}
	}
	if limit >= 0 && live >= limit {
		return nil, live, false
	}
	if !joined {
		st.conns = append(st.conns, cl)
	}
	return st, live, true
}

// leave removes cl from username's connections.
func (as *accounts) leave(username string, cl *mqtt.Client) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if st, ok := as.byName[username]; ok {
		st.conns = slices.DeleteFunc(st.conns, func(c *mqtt.Client) bool { return c == cl })
		if len(st.conns) == 0 {
			st.conns = nil // the backing array goes with the last connection
		}
	}
}

// dropClosed forgets the connections that closed without a disconnect event.
func (st *accountState) dropClosed() {
	st.conns = slices.DeleteFunc(st.conns, (*mqtt.Client).Closed)
	if len(st.conns) == 0 {
		st.conns = nil
	}
}

// sweep forgets the accounts with no live connection whose bucket is full by
// now (a reconnecting flooder gets no fresh burst before that), and drops
// connections that closed without a disconnect event.
func (as *accounts) sweep(now time.Time) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for name, st := range as.byName {
		st.dropClosed()
		if len(st.conns) == 0 && (st.bucket == nil || st.bucket.full(now)) {
			delete(as.byName, name)
		}
	}
}

// len counts the accounts held (tests).
func (as *accounts) len() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.byName)
}
