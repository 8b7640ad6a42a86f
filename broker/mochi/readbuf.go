package mqtt

import (
	"bufio"
	"io"
	"sync"
)

// packetReader reads a client's packets through a read buffer that the
// client holds only while it has bytes to read. A client is idle almost all
// of the time, waiting for its next packet: it waits on a one-byte read
// without a buffer, takes a buffer from the server's pool once that byte
// has arrived, and gives it back (release) once a packet has been read and
// nothing more is buffered. So a broker holds about one read buffer per
// client that is sending, not one per connection (2 KiB each by default,
// ~20 MB at 10,000 connections).
//
// The read that ends the wait reads up to len(small) bytes into the reader
// itself, not one byte: a packet that short (a PUBACK, PUBREC, PUBREL,
// PUBCOMP or PINGREQ) is read whole by that one call, without a buffer from
// the pool. A longer packet costs one more read call than a held buffer
// would, as with the one-byte wait before; a QoS 1 subscriber's PUBACK no
// longer does (one read call of the eight or so a QoS 1 message at fan-out 1
// costs the broker). small keeps the struct at 48 bytes, the size class a
// one-byte array already took.
//
// A packetReader is used by the client's read goroutine only. small holds
// bytes only while br is nil: br is taken once small is read out.
type packetReader struct {
	conn       io.Reader
	pool       *sync.Pool    // of *bufio.Reader, all of one size
	br         *bufio.Reader // nil while idle
	small      [14]byte      // what the read that ended a wait returned, from start to end
	start, end uint8
}

// newReadBufferPool returns a pool of read buffers of size bytes.
func newReadBufferPool(size int) *sync.Pool {
	return &sync.Pool{New: func() any { return bufio.NewReaderSize(nil, size) }}
}

func newPacketReader(conn io.Reader, pool *sync.Pool) *packetReader {
	return &packetReader{conn: conn, pool: pool}
}

// ReadByte returns the next byte; while idle, it waits for it without
// holding a buffer, reading what arrived into small.
func (r *packetReader) ReadByte() (byte, error) {
	if r.start < r.end {
		b := r.small[r.start]
		r.start++
		return b, nil
	}
	if r.br != nil {
		return r.br.ReadByte()
	}
	for {
		n, err := r.conn.Read(r.small[:])
		if n > 0 {
			r.start, r.end = 1, uint8(n)
			return r.small[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Read reads what small holds, then through the buffer, taking one if the
// reader has none.
func (r *packetReader) Read(p []byte) (int, error) {
	if r.start < r.end {
		n := copy(p, r.small[r.start:r.end])
		r.start += uint8(n)
		return n, nil
	}
	if r.br == nil {
		r.acquire()
	}
	return r.br.Read(p)
}

func (r *packetReader) acquire() {
	r.br = r.pool.Get().(*bufio.Reader)
	r.br.Reset(r.conn)
}

// release gives the buffer back to the pool if it holds no bytes of a next
// packet; a buffer with bytes in it stays with the client (bytes in small
// stay there).
func (r *packetReader) release() {
	if r == nil || r.br == nil || r.br.Buffered() > 0 {
		return
	}
	r.br.Reset(nil)
	r.pool.Put(r.br)
	r.br = nil
}

// idle reports whether the reader holds no bytes of a next packet: its
// next read waits on the connection.
func (r *packetReader) idle() bool {
	return r.br == nil && r.start >= r.end
}
