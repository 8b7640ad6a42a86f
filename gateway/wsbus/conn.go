package wsbus

import (
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// client is one websocket connection. Frames to it go through out, drained
// by its own writer goroutine, so a slow client never blocks the others or
// the MQTT delivery (BUS.md §3).
type client struct {
	conn     *websocket.Conn
	remote   string
	out      chan *websocket.PreparedMessage
	done     chan struct{} // closed by kill
	killOnce sync.Once
}

func newClient(conn *websocket.Conn, queueLen int) *client {
	return &client{
		conn:   conn,
		remote: conn.RemoteAddr().String(),
		out:    make(chan *websocket.PreparedMessage, queueLen),
		done:   make(chan struct{}),
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

// ServeHTTP upgrades a request on the route to a websocket connection and
// serves it until it ends; other paths get 404 (ovos-messagebus serves only
// its route).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.cfg.Route {
		http.NotFound(w, r)
		return
	}
	if !s.enter() {
		http.Error(w, "websocket bus shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.wg.Done()
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return // Upgrade has replied
	}
	s.serveConn(newClient(conn, s.cfg.QueueLen))
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

// serveConn greets c, registers it for bus messages and reads its frames
// until the connection ends. The greeting is queued before registration, so
// it is always the first frame.
func (s *Server) serveConn(c *client) {
	c.enqueue(s.greeting)
	if !s.register(c) {
		c.kill()
		return
	}
	s.wg.Add(1) // the handler's own count is held, so this never races Wait
	go func() {
		defer s.wg.Done()
		if err := c.writeLoop(s.cfg.WriteTimeout); err != nil {
			s.log.Info("websocket client write failed, disconnecting", "remote", c.remote, "err", err)
		}
		c.kill()
	}()
	s.log.Debug("websocket client connected", "remote", c.remote)
	err := s.readLoop(c)
	c.kill()
	s.unregister(c)
	s.log.Debug("websocket client disconnected", "remote", c.remote, "err", err)
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
