package broker

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Before a client has authenticated it is a stranger, and a stranger must
// not cost the broker more than a little (docs/security.md, "Before
// authentication"):
//   - a deadline (Config.ConnectTimeout) from accept to an authenticated
//     CONNECT: a connection that never finishes its CONNECT is closed;
//   - the first packet must be a CONNECT of at most Config.MaxConnectSize
//     bytes, checked from its fixed header before mochi allocates a buffer
//     for it (mochi allocates the whole remaining length at once);
//   - at most Config.MaxPendingConnects connections at that stage; more are
//     closed as they are accepted.

// gate counts the connections that have not authenticated yet.
type gate struct {
	max     int64
	pending atomic.Int64
	closed  atomic.Int64 // connections closed by a pre-authentication limit
}

// enter admits one more unauthenticated connection unless the gate is full.
func (g *gate) enter() bool {
	if g.pending.Add(1) > g.max {
		g.pending.Add(-1)
		g.closed.Add(1)
		return false
	}
	return true
}

var (
	errNotConnect     = errors.New("mqtt: first packet is not CONNECT")
	errConnectTooLong = errors.New("mqtt: CONNECT larger than the broker accepts before authentication")
)

// preauthConn is a connection until it authenticates (and then a plain
// pass-through): it checks the first packet's fixed header as the bytes come
// in, and gives its gate slot back when the client authenticates (OnConnect)
// or the connection closes, whichever comes first.
type preauthConn struct {
	net.Conn
	gate    *gate
	maxSize int

	// Fixed-header parsing state; only the connection's reading goroutine
	// touches it.
	done      bool // the first packet's header was checked
	seenType  bool
	remaining int
	shift     uint
	lenBytes  int

	released atomic.Bool
}

func newPreauthConn(c net.Conn, g *gate, maxSize int, timeout time.Duration) *preauthConn {
	_ = c.SetDeadline(time.Now().Add(timeout)) // mochi sets the keepalive deadline once authenticated
	return &preauthConn{Conn: c, gate: g, maxSize: maxSize}
}

func (c *preauthConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.released.Load() {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.gate.closed.Add(1) // no authenticated CONNECT within ConnectTimeout
		}
	}
	if !c.done && n > 0 {
		if herr := c.inspect(p[:n]); herr != nil {
			c.gate.closed.Add(1)
			return 0, herr
		}
	}
	return n, err
}

// inspect feeds bytes of the first packet's fixed header [MQTT-2.1.1]: the
// type byte (CONNECT, flags 0) and the variable-length remaining length.
func (c *preauthConn) inspect(b []byte) error {
	for _, x := range b {
		if !c.seenType {
			if x != 0x10 {
				return errNotConnect
			}
			c.seenType = true
			continue
		}
		c.remaining |= int(x&0x7f) << c.shift
		c.shift += 7
		c.lenBytes++
		if c.remaining > c.maxSize {
			return errConnectTooLong
		}
		if x&0x80 == 0 {
			c.done = true
			return nil
		}
		if c.lenBytes == 4 {
			return errConnectTooLong // a fifth length byte is malformed anyway
		}
	}
	return nil
}

// authenticated gives the gate slot back; the keepalive deadline mochi sets
// next replaces the connect deadline.
func (c *preauthConn) authenticated() { c.release() }

func (c *preauthConn) release() {
	if c.released.CompareAndSwap(false, true) {
		c.gate.pending.Add(-1)
	}
}

func (c *preauthConn) Close() error {
	c.release()
	return c.Conn.Close()
}
