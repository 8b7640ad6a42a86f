package process

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"sync"
)

// maxLine is the longest line logged as one; a longer line is split, so a
// skill that never writes a newline cannot grow the agent's memory.
const maxLine = 8 << 10

// readLines logs every line of r with the stream name and keeps it in the
// tail, until r ends. It always reads to the end, so a chatty skill never
// blocks on a full pipe.
func (p *Process) readLines(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			line := strings.TrimRight(string(chunk), "\r\n")
			p.tail.add(line)
			p.log.Info("skill output", "stream", stream, "line", line)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// ring keeps the last n lines.
type ring struct {
	// mu guards buf, next and full.
	mu   sync.Mutex
	buf  []string
	next int  // where the next line goes
	full bool // buf has wrapped
}

func newRing(n int) *ring { return &ring{buf: make([]string, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = line
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
}

// lines returns a copy, oldest first.
func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.buf[:r.next]...)
	}
	return append(append([]string(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}
