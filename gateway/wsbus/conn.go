package wsbus

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// client is one websocket connection. Frames to it go through out, drained
// by its own writer goroutine, so a slow client never blocks the others or
// the MQTT delivery (BUS.md §3). A services client is served from the
// server's device transport; a skill client has its own transport, tr,
// with the skill's credentials, for both directions.
type client struct {
	conn     *websocket.Conn
	remote   string
	id       identity
	maxFrame int
	tr       SkillTransport // nil for services
	out      chan *websocket.PreparedMessage
	done     chan struct{} // closed by kill
	killOnce sync.Once
}

func newClient(conn *websocket.Conn, id identity, maxFrame, queueLen int) *client {
	return &client{
		conn:     conn,
		remote:   conn.RemoteAddr().String(),
		id:       id,
		maxFrame: maxFrame,
		out:      make(chan *websocket.PreparedMessage, queueLen),
		done:     make(chan struct{}),
	}
}

// enqueue queues m without blocking. It reports false when the queue is
// full; a message for a client being killed is discarded and reports true.
func (c *client) enqueue(m *websocket.PreparedMessage) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	select {
	case c.out <- m:
		return true
	default:
		return false
	}
}

// kill drops the TCP connection without a close frame (gorilla's Close
// sends none; BUS.md §3) and stops the writer. It is idempotent; the reader
// then fails and the handler unregisters the client.
func (c *client) kill() {
	c.killOnce.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// writeLoop writes queued frames in order until kill or a write error.
func (c *client) writeLoop(timeout time.Duration) error {
	for {
		select {
		case <-c.done:
			return nil
		case m := <-c.out:
			if timeout > 0 {
				_ = c.conn.SetWriteDeadline(time.Now().Add(timeout))
			}
			if err := c.conn.WritePreparedMessage(m); err != nil {
				return err
			}
		}
	}
}

// ServeHTTP authenticates a request (auth.go), upgrades it to a websocket
// connection and serves it until it ends. A refused request gets 403 before
// any upgrade and a log line saying why.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := s.authenticate(r)
	if err != nil {
		s.log.Warn("websocket connection refused", "remote", r.RemoteAddr, "reason", err)
		http.Error(w, "forbidden: this route gives no access to the bus (docs/ovos.md)", http.StatusForbidden)
		return
	}
	if !s.enter() {
		http.Error(w, "websocket bus shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.wg.Done()
	if !s.reserve() {
		s.log.Warn("websocket connection refused: too many connections", "remote", r.RemoteAddr, "max", s.cfg.MaxClients)
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	defer s.unreserve()
	tr, err := s.dialSkill(id)
	if err != nil {
		s.log.Warn("websocket connection refused: the skill's MQTT connection failed", "remote", r.RemoteAddr, "who", id, "err", err)
		http.Error(w, "the skill's bus connection failed", http.StatusServiceUnavailable)
		return
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		closeTransport(tr)
		s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return // Upgrade has replied
	}
	c := newClient(conn, id, s.maxFrame(id), s.cfg.QueueLen)
	c.tr = tr
	s.serveConn(c)
}

// dialSkill opens a skill client's own MQTT connection; nil for services.
func (s *Server) dialSkill(id identity) (SkillTransport, error) {
	if id.skill == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	tr, err := s.cfg.DialSkill(ctx, id.skill)
	if err == nil && tr == nil {
		err = errors.New("no transport")
	}
	return tr, err
}

func closeTransport(tr SkillTransport) {
	if tr != nil {
		_ = tr.Close()
	}
}

func (s *Server) maxFrame(id identity) int {
	if id.skill != "" {
		return s.cfg.SkillMaxFrame
	}
	return s.cfg.MaxFrame
}

// enter counts a handler in s.wg unless the server is closed. Adding under
// mu, with Close setting closed under mu before it waits, keeps Add from
// racing Wait.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// reserve counts a connection against MaxClients.
func (s *Server) reserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns >= s.cfg.MaxClients {
		return false
	}
	s.conns++
	return true
}

func (s *Server) unreserve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns--
}

// serveConn greets c, registers it for bus messages and reads its frames
// until the connection ends. The greeting is queued first, and the writer
// starts only once a skill's own subscription is in place: the greeting is
// always the first frame, and whatever the client sends after it comes back
// as its echo (BUS.md §3).
func (s *Server) serveConn(c *client) {
	c.enqueue(s.greeting)
	if !s.register(c) {
		c.kill()
		closeTransport(c.tr)
		return
	}
	unsubscribe, err := s.subscribeSkill(c)
	if err == nil {
		s.wg.Add(1) // the handler's own count is held, so this never races Wait
		go func() {
			defer s.wg.Done()
			if err := c.writeLoop(s.cfg.WriteTimeout); err != nil {
				s.log.Info("websocket client write failed, disconnecting", "remote", c.remote, "who", c.id, "err", err)
			}
			c.kill()
		}()
		s.log.Debug("websocket client connected", "remote", c.remote, "who", c.id)
		err = s.readLoop(c)
	} else {
		s.log.Warn("websocket skill client dropped: subscribe on its MQTT connection", "remote", c.remote, "who", c.id, "err", err)
	}
	c.kill()
	unsubscribe()
	closeTransport(c.tr)
	s.unregister(c)
	s.log.Debug("websocket client disconnected", "remote", c.remote, "who", c.id, "err", err)
}

func (s *Server) register(c *client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.clients[c] = struct{}{}
	return true
}

func (s *Server) unregister(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, c)
}

func (s *Server) snapshotLocked() []*client {
	out := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		out = append(out, c)
	}
	return out
}
