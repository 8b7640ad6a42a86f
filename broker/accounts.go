package broker

import (
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
	conns  map[*mqtt.Client]struct{}
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
		st = &accountState{bucket: newBucket(), conns: make(map[*mqtt.Client]struct{})}
		as.byName[username] = st
	}
	live := 0
	for c := range st.conns {
		if c.Closed() {
			delete(st.conns, c)
			continue
		}
		if c.ID != id {
			live++
		}
	}
	if limit >= 0 && live >= limit {
		return nil, live, false
	}
	st.conns[cl] = struct{}{}
	return st, live, true
}

// leave removes cl from username's connections.
func (as *accounts) leave(username string, cl *mqtt.Client) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if st, ok := as.byName[username]; ok {
		delete(st.conns, cl)
	}
}

// sweep forgets the accounts with no live connection whose bucket is full by
// now (a reconnecting flooder gets no fresh burst before that), and drops
// connections that closed without a disconnect event.
func (as *accounts) sweep(now time.Time) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for name, st := range as.byName {
		for c := range st.conns {
			if c.Closed() {
				delete(st.conns, c)
			}
		}
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
