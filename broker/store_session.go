package broker

import (
	"runtime"
	"weak"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// sessionKind says whether a client's session state is written to the store.
type sessionKind uint8

const (
	// sessionStored: a persistent session, and any client the store was not
	// told about (one restored from the store at start).
	sessionStored sessionKind = iota
	// sessionClean: a session that ends with its connection; nothing of it
	// is ever written, so nothing of it is deleted either.
	sessionClean
	// sessionEnded: a persistent session that ended (expiry 0 at DISCONNECT)
	// or was taken over; nothing more of it is written, and the deletes
	// mochi makes as it clears the session still reach its rows.
	sessionEnded
)

// mochi can deliver to a client after OnDisconnect: it clears the client's
// in-flight messages and subscriptions and removes it from Clients only
// afterwards (server.go attachClient), and a publisher that looked the
// client up before that still calls publishToClient, which stores the
// message in flight (and calls OnQosPublish) without checking Closed. So a
// client that stores nothing must stay marked as such for as long as
// anything can still hold it. stopped is that mark, keyed by a weak pointer:
// it lives exactly as long as the client object (runtime.AddCleanup drops
// it once the client is collected), with no hook to miss and no leak when a
// connection fails between OnSessionEstablish and OnSessionEstablished.
//
// conn is a cache over it for the connected clients, from
// OnSessionEstablished to OnDisconnect (both on the client's goroutine),
// so a delivery to a connected client does not build a weak pointer.

// stopSession marks cl as storing nothing from now on. For sessionEnded it
// also drops cl's conn entry under mu, so putFor's check under mu sees the
// change atomically: a put either precedes the mark (and the delete mochi
// makes when it clears the message follows it) or is skipped.
func (s *store) stopSession(cl *mqtt.Client, kind sessionKind) {
	wp := weak.Make(cl)
	s.mu.Lock()
	was, known := s.stopped[wp]
	if was != sessionClean { // a clean session stays clean
		s.stopped[wp] = kind
	}
	_, _ = s.conn.remove(cl)
	s.mu.Unlock()
	if !known {
		runtime.AddCleanup(cl, s.releaseSession, wp)
	}
}

// releaseSession forgets a collected client; the runtime calls it.
func (s *store) releaseSession(wp weak.Pointer[mqtt.Client]) {
	s.mu.Lock()
	delete(s.stopped, wp)
	s.mu.Unlock()
}

// connKind is cl's kind while it is connected and established, without
// s.mu (under conn's read lock only).
func (s *store) connKind(cl *mqtt.Client) (sessionKind, bool) {
	v, ok := s.conn.load(cl)
	if !ok {
		return sessionStored, false
	}
	return v, true
}

// connClean reports, without s.mu, whether cl is a connected clean session:
// the hot paths' early exit (a clean session never changes back).
func (s *store) connClean(cl *mqtt.Client) bool {
	k, _ := s.connKind(cl)
	return k == sessionClean
}

// kindLocked is cl's kind; s.mu is held. wp is weak.Make(cl) when the
// caller already built it (zero otherwise).
func (s *store) kindLocked(cl *mqtt.Client, wp weak.Pointer[mqtt.Client]) sessionKind {
	if k, ok := s.connKind(cl); ok {
		return k
	}
	if wp == (weak.Pointer[mqtt.Client]{}) {
		wp = weak.Make(cl)
	}
	return s.stopped[wp]
}

// putFor records a change to cl's session state unless cl stores nothing.
// The check and the write happen under one hold of mu (see stopSession).
func (s *store) putFor(cl *mqtt.Client, k storeKey, c change) {
	kind, connected := s.connKind(cl)
	if kind == sessionClean {
		return // never changes back; no lock needed
	}
	var wp weak.Pointer[mqtt.Client]
	if !connected {
		wp = weak.Make(cl) // outside the lock: offline or just gone
	}
	s.mu.Lock()
	if s.kindLocked(cl, wp) != sessionStored {
		s.mu.Unlock()
		return
	}
	s.putLocked(k, c)
	s.mu.Unlock()
	s.wake()
}

// delFor deletes a row of cl's session; a clean session has none.
func (s *store) delFor(cl *mqtt.Client, k storeKey) {
	if kind, connected := s.connKind(cl); connected {
		if kind != sessionClean {
			s.del(k)
		}
		return
	}
	wp := weak.Make(cl)
	s.mu.Lock()
	if s.stopped[wp] == sessionClean {
		s.mu.Unlock()
		return
	}
	s.putLocked(k, change{del: true})
	s.mu.Unlock()
	s.wake()
}

// forgetClient deletes the client record of id if one is stored or about
// to be: a clean connect of an id that never had a persistent session
// queues nothing, so pending cannot grow with client ids while the store
// cannot write.
func (s *store) forgetClient(id string) {
	s.mu.Lock()
	_, known := s.clients[id]
	if known {
		s.putLocked(storeKey{kind: kindClient, client: id}, change{del: true})
	}
	s.mu.Unlock()
	if known {
		s.wake()
	}
}
