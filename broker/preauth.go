package broker

import (
	"errors"
	"io"
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
//   - at most Config.MaxPendingConnects connections at that stage; more wait
//     in the kernel's backlog until one authenticates or is closed (the
//     websocket listener closes them after the upgrade).

// gate counts the connections that have not authenticated yet. A slot is a
// token in slots: the TCP listener takes one before it accepts (so past the
// cap, strangers wait in the kernel's backlog and cost nothing, rather than
// being accepted and closed in a loop), the websocket listener takes one
// after its HTTP upgrade or closes the connection.
type gate struct {
	slots   chan struct{}
	pending atomic.Int64 // accepted connections holding a slot (a gauge for Stats)
	closed  atomic.Int64 // connections closed by a pre-authentication limit
}

func newGate(max int) *gate { return &gate{slots: make(chan struct{}, max)} }

// acquire waits for a free slot; false when stop closes first.
func (g *gate) acquire(stop <-chan struct{}) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

// tryAcquire takes a free slot without waiting.
func (g *gate) tryAcquire() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		g.closed.Add(1)
		return false
	}
}

// release frees a slot taken by acquire or tryAcquire.
func (g *gate) release() { <-g.slots }

var (
	errNotConnect     = errors.New("mqtt: first packet is not CONNECT")
	errConnectTooLong = errors.New("mqtt: CONNECT larger than the broker accepts before authentication")
)

// preauthConn is a connection until it authenticates (and then a plain
// pass-through). admit reads the first packet's fixed header on the
// connection's goroutine before mochi allocates a client for it, so a
// stranger who sends nothing, or anything but a small CONNECT, costs a
// goroutine and a few bytes, never a mochi client. The gate slot is given
// back when the client authenticates (OnConnect) or the connection closes,
// whichever comes first.
type preauthConn struct {
	net.Conn
	gate    *gate
	maxSize int

	header []byte // the fixed header admit read, handed to mochi first

	released atomic.Bool

	cont *connection // runs the reads mochi hands on (ContinueReads); nil: they stay on one goroutine
}

// ContinueReads is mqtt.ReadContinuer: mochi hands an idle connection's
// reads to a fresh goroutine, whose stack stays at the 2 KiB a goroutine
// starts with (the one that handled a packet keeps 4 KiB or more). The
// websocket listener leaves cont nil: its HTTP handler closes the
// connection when it returns, so the reads stay on it.
func (c *preauthConn) ContinueReads(read func() error) bool {
	if c.cont == nil {
		return false
	}
	c.cont.continueReads(read)
	return true
}

func newPreauthConn(c net.Conn, g *gate, maxSize int, timeout time.Duration) *preauthConn {
	_ = c.SetDeadline(time.Now().Add(timeout)) // mochi sets the keepalive deadline once authenticated
	g.pending.Add(1)
	return &preauthConn{Conn: c, gate: g, maxSize: maxSize}
}

// admit reads the first packet's fixed header [MQTT-2.1.1] byte by byte
// (never past it): the type byte must be CONNECT with flags 0, and the
// remaining length at most maxSize. A refusal or the deadline passing is
// counted in the gate.
func (c *preauthConn) admit() error {
	var hdr [5]byte
	remaining, shift := 0, uint(0)
	for n := 0; ; n++ {
		if _, err := io.ReadFull(c.Conn, hdr[n:n+1]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				c.gate.closed.Add(1) // no CONNECT within ConnectTimeout
			}
			return err
		}
		x := hdr[n]
		switch {
		case n == 0 && x != 0x10:
			c.gate.closed.Add(1)
			return errNotConnect
		case n == 0:
			continue
		}
		remaining |= int(x&0x7f) << shift
		shift += 7
		if remaining > c.maxSize || (x&0x80 != 0 && n == 4) {
			c.gate.closed.Add(1)
			return errConnectTooLong
		}
		if x&0x80 == 0 {
			c.header = append([]byte(nil), hdr[:n+1]...)
			return nil
		}
	}
}

func (c *preauthConn) Read(p []byte) (int, error) {
	if len(c.header) > 0 {
		n := copy(p, c.header)
		c.header = c.header[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// authenticated gives the gate slot back; the keepalive deadline mochi sets
// next replaces the connect deadline.
func (c *preauthConn) authenticated() { c.release() }

func (c *preauthConn) release() {
	if c.released.CompareAndSwap(false, true) {
		c.gate.pending.Add(-1)
		c.gate.release()
	}
}

func (c *preauthConn) Close() error {
	c.release()
	return c.Conn.Close()
}
