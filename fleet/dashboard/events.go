package dashboard

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// eventGap is the least time between two events on one stream: a burst of
// changes (a rollout over a thousand devices) costs a page one refresh per
// gap, not one per change.
const eventGap = 300 * time.Millisecond

// listener is one open event stream's pending changes.
type listener struct {
	wake chan struct{}

	mu       sync.Mutex
	subjects map[string]bool
	all      bool
}

func (l *listener) take() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.all {
		l.all = false
		clear(l.subjects)
		return "*", true
	}
	if len(l.subjects) == 0 {
		return "", false
	}
	out := make([]string, 0, len(l.subjects))
	for s := range l.subjects {
		out = append(out, s)
	}
	clear(l.subjects)
	return strings.Join(out, " "), true
}

// hub passes the view's batches of changes to the open event streams.
type hub struct {
	mu     sync.Mutex
	ls     map[*listener]bool
	closed chan struct{}
}

func newHub() *hub { return &hub{ls: map[*listener]bool{}, closed: make(chan struct{})} }

func (h *hub) add() (*listener, func()) {
	l := &listener{wake: make(chan struct{}, 1), subjects: map[string]bool{}}
	h.mu.Lock()
	h.ls[l] = true
	h.mu.Unlock()
	return l, func() {
		h.mu.Lock()
		delete(h.ls, l)
		h.mu.Unlock()
	}
}

func (h *hub) publish(subjects []string, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.ls {
		l.mu.Lock()
		if all || len(l.subjects) > 1000 {
			l.all = true
		}
		for _, s := range subjects {
			l.subjects[s] = true
		}
		l.mu.Unlock()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (h *hub) close() { close(h.closed) }

// open is how many event streams are open.
func (h *hub) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ls)
}

// events is the page's Server-Sent Events stream: "change" events whose
// data is the changed subjects separated by spaces ("*" for everything),
// after the view applied them, and a comment every 25 s to keep proxies
// from closing it.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request, ss session) {
	// The stream counts as a reader from here on, and the view is current
	// (its feed subscribed) before the stream says hello: every change
	// after the hello reaches the stream.
	l, done := d.hub.add()
	defer done()
	if err := d.view.ready(r.Context()); err != nil {
		d.fail(w, r, ss, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("retry: 2000\n: hello\n\n"))
	if rc.Flush() != nil {
		return
	}
	ping := time.NewTicker(25 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-d.hub.closed:
			return
		case <-ping.C:
			_, _ = w.Write([]byte(": ping\n\n"))
		case <-l.wake:
			data, ok := l.take()
			if !ok {
				continue
			}
			_, _ = w.Write([]byte("event: change\ndata: " + data + "\n\n"))
		}
		if rc.Flush() != nil {
			return
		}
		select { // pace: what comes meanwhile goes in the next event
		case <-r.Context().Done():
			return
		case <-time.After(eventGap):
		}
	}
}
