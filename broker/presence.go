package broker

// Presence support for the fleet controller (docs/topics.md, Presence): a
// device is online exactly while its agent holds a live connection, which
// only the broker knows.

// live counts username's connections that are not closed.
func (as *accounts) live(username string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	st, ok := as.byName[username]
	if !ok {
		return 0
	}
	n := 0
	for _, c := range st.conns {
		if !c.Closed() {
			n++
		}
	}
	return n
}

// Connected reports whether the account username holds a live, authenticated
// connection now.
func (b *Broker) Connected(username string) bool { return b.policy.accounts.live(username) > 0 }

// NotifyDisconnect makes fn be called whenever an authenticated connection
// closes, with its account's username. fn runs on the broker's goroutines and
// must not block (hand the work to a queue). A later call replaces fn.
func (b *Broker) NotifyDisconnect(fn func(username string)) { b.policy.onGone.Store(&fn) }

// gone tells the NotifyDisconnect callback, if any.
func (p *policy) gone(username string) {
	if fn := p.onGone.Load(); fn != nil {
		(*fn)(username)
	}
}
