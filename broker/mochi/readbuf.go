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
// ~20 MB at 10,000 connections). The cost is one more read call for a
// packet that arrives when nothing is buffered.
//
// A packetReader is used by the client's read goroutine only.
type packetReader struct {
	conn io.Reader
	pool *sync.Pool    // of *bufio.Reader, all of one size
	br   *bufio.Reader // nil while idle
	one  [1]byte
}

// newReadBufferPool returns a pool of read buffers of size bytes.
func newReadBufferPool(size int) *sync.Pool {
	return &sync.Pool{New: func() any { return bufio.NewReaderSize(nil, size) }}
}

func newPacketReader(conn io.Reader, pool *sync.Pool) *packetReader {
	return &packetReader{conn: conn, pool: pool}
}

// ReadByte returns the next byte; while idle, it waits for it without
// holding a buffer.
func (r *packetReader) ReadByte() (byte, error) {
	if r.br != nil {
		return r.br.ReadByte()
	}
	for {
		n, err := r.conn.Read(r.one[:])
		if n == 1 {
			r.acquire()
			return r.one[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Read reads through the buffer, taking one if the reader is idle.
func (r *packetReader) Read(p []byte) (int, error) {
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
// packet; a buffer with bytes in it stays with the client.
func (r *packetReader) release() {
	if r == nil || r.br == nil || r.br.Buffered() > 0 {
		return
	}
	r.br.Reset(nil)
	r.pool.Put(r.br)
	r.br = nil
}
