package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// tcpListener is an MQTT listener on a socket we bound ourselves, so a port in
// use is an error at start-up. Each connection passes the pre-authentication
// limits (preauth.go) and recovers from a panic in mochi's packet decoding: a
// truncated MQTT 5 SUBSCRIBE panics in v2.7.9 (mochi-mqtt/server#501) and
// would otherwise kill the whole process.
type tcpListener struct {
	id        string
	ln        net.Listener
	proto     string
	log       *slog.Logger
	admit     admission
	health    listenerHealth
	stop      chan struct{} // closed by Close: Serve may wait for a gate slot
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// admission is what a listener applies to a new connection before mochi
// reads from it.
type admission struct {
	gate    *gate
	maxSize int
	timeout time.Duration
}

// wrap makes c, which holds a gate slot, a pre-authentication connection.
func (a admission) wrap(c net.Conn) *preauthConn {
	return newPreauthConn(c, a.gate, a.maxSize, a.timeout)
}

// connection is one connection from accept to its end. Its goroutine spends
// its life handling packets or parked in mochi's Read waiting for the next
// one, with serve's frame below it, so serve's frame holds only the
// receiver: admission, recovery and logging are calls of their own, never
// inlined. On TCP, once a packet is handled and nothing more is buffered,
// mochi hands the reads to a fresh goroutine (continueReads, the fork's
// ReadContinuer): an idle connection waits on a goroutine that has handled
// no packet, whose stack stays at the 2 KiB it starts with, where a
// goroutine that handled one keeps 4 KiB at best (the runtime halves a
// stack only when under a quarter of it is in use, counting its 800-byte
// nosplit guard; docs/benchmarks.md, broker memory round three;
// TestIdleDeviceStacksShrink). The websocket listener keeps one goroutine.
type connection struct {
	listener  string
	c         *preauthConn
	establish listeners.EstablishFn
	log       *slog.Logger
	wg        *sync.WaitGroup // Done when serve returns; nil when the caller counts the connection itself
}

// serve hands the connection to mochi once its first bytes are a CONNECT
// within the limits (preauthConn.admit), otherwise closes it, and turns a
// panic in mochi into a closed connection and a log line (trap 1,
// docs/broker.md: a truncated MQTT 5 SUBSCRIBE panics in v2.7.9's decoder).
func (r *connection) serve() {
	defer r.end()
	if !r.admitted() {
		return
	}
	r.ended(r.establish(r.listener, r.c))
}

// continueReads runs the connection's reads on a new goroutine
// (mqtt.ReadContinuer, through preauthConn.ContinueReads), which counts in
// the listener's wait group until it returns and recovers from a panic in
// mochi as serve does (trap 1): each goroutine of the connection holds a
// count, taken here before the goroutine handing the reads over gives its
// own back, so Close waits for the last.
func (r *connection) continueReads(read func() error) {
	if r.wg != nil {
		r.wg.Add(1)
	}
	go r.resume(read)
}

// resume is a goroutine continueReads started: its frame holds the
// receiver and read only (the wait for a packet happens below it and must
// fit the 2 KiB a new goroutine starts with; TestIdleDeviceStacksShrink).
func (r *connection) resume(read func() error) {
	defer r.end()
	r.ended(read())
}

// admitted reports whether the connection passed the pre-authentication
// limits; it closes a connection that did not.
//
//go:noinline
func (r *connection) admitted() bool {
	if err := r.c.admit(); err != nil {
		_ = r.c.Close()
		return false
	}
	return true
}

// end is serve's deferred call (recover stops a panic only when called by
// the deferred function itself).
//
//go:noinline
func (r *connection) end() {
	if r.wg != nil {
		defer r.wg.Done()
	}
	if p := recover(); p != nil {
		r.log.Warn("mqtt connection panicked; closed", "listener", r.listener, "remote", r.c.RemoteAddr().String(), "panic", fmt.Sprint(p))
		_ = r.c.Close()
	}
}

// ended logs how the connection ended; nothing when it ended cleanly or
// its reads went on on another goroutine (mqtt.ErrReadsContinued).
//
//go:noinline
func (r *connection) ended(err error) {
	if err == nil || errors.Is(err, io.EOF) || err == mqtt.ErrReadsContinued {
		return
	}
	r.log.Debug("mqtt connection ended", "listener", r.listener, "remote", r.c.RemoteAddr().String(), "error", err)
}

func listenTCP(id, addr string, tlsCfg *tls.Config, admit admission) (*tcpListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen mqtt on %s: %w", addr, err)
	}
	proto := "mqtt"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		proto = "mqtts"
	}
	return &tcpListener{id: id, ln: ln, proto: proto, admit: admit, stop: make(chan struct{})}, nil
}

func (l *tcpListener) ID() string                  { return l.id }
func (l *tcpListener) Address() string             { return l.ln.Addr().String() }
func (l *tcpListener) Protocol() string            { return l.proto }
func (l *tcpListener) Init(log *slog.Logger) error { l.log = log; return nil }

// Serve accepts until Close; each connection runs on its own goroutine. An
// accept error other than the listener being closed (EMFILE when the process
// is out of file descriptors, ECONNABORTED, ...) is not the end of the
// listener: it backs off from 5 ms doubling to 1 s and accepts again, as
// net/http's Server does, and reports the error in its health meanwhile.
func (l *tcpListener) Serve(establish listeners.EstablishFn) {
	l.health.serving.Store(true)
	defer l.health.serving.Store(false)
	var delay time.Duration
	for {
		if !l.admit.gate.acquire(l.stop) {
			return
		}
		conn, err := l.ln.Accept()
		if err != nil {
			l.admit.gate.release()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if l.health.failed(err) {
				l.log.Error("mqtt accept failed; retrying", "listener", l.id, "error", err, "retry_in", delay)
			}
			time.Sleep(delay)
			continue
		}
		if delay > 0 {
			l.log.Info("mqtt accepting again", "listener", l.id)
			l.health.recovered()
			delay = 0
		}
		l.wg.Add(1)
		r := &connection{listener: l.id, c: l.admit.wrap(conn), establish: establish, log: l.log, wg: &l.wg}
		r.c.cont = r // an idle connection waits on a fresh goroutine (mqtt.ReadContinuer)
		go r.serve()
	}
}

// Close stops accepting and waits for the connections to end. It does not
// call mochi's closeClients: Broker.Close disconnects clients itself, because
// mochi's Clients.GetByListener takes a read lock twice and deadlocks against
// a client leaving at the same moment (v2.7.9).
func (l *tcpListener) Close(listeners.CloseFn) {
	l.stopAccepting()
	l.wg.Wait()
}

// stopAccepting ends Serve (also while it waits for a gate slot); the
// connections go on.
func (l *tcpListener) stopAccepting() {
	l.closeOnce.Do(func() { close(l.stop) })
	_ = l.ln.Close()
}

// wsListener serves MQTT over websocket on one path (subprotocol "mqtt") from
// its own http.Server, so binding errors are reported (mochi's own websocket
// listener only logs them) and other paths answer 404.
type wsListener struct {
	id        string
	ln        net.Listener
	path      string
	tls       bool
	srv       *http.Server
	log       *slog.Logger
	upgrader  websocket.Upgrader
	establish listeners.EstablishFn
	admit     admission
	health    listenerHealth
	wg        sync.WaitGroup // connections; http.Server.Shutdown does not wait for hijacked ones
}

func listenWS(id, addr, path string, tlsCfg *tls.Config, admit admission) (*wsListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen mqtt-over-websocket on %s: %w", addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return &wsListener{
		id: id, ln: ln, path: path, tls: tlsCfg != nil, admit: admit,
		upgrader: websocket.Upgrader{Subprotocols: []string{"mqtt"}},
	}, nil
}

func (l *wsListener) ID() string      { return l.id }
func (l *wsListener) Address() string { return l.ln.Addr().String() }
func (l *wsListener) Protocol() string {
	if l.tls {
		return "wss"
	}
	return "ws"
}

// Init builds the HTTP server; mochi calls it from AddListener, before Serve.
func (l *wsListener) Init(log *slog.Logger) error {
	l.log = log
	mux := http.NewServeMux()
	mux.HandleFunc(l.path, l.handle)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return nil
}

func (l *wsListener) handle(w http.ResponseWriter, r *http.Request) {
	l.wg.Add(1)
	defer l.wg.Done()
	c, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer c.Close()
	if !l.admit.gate.tryAcquire() {
		return
	}
	// serve runs on this goroutine (the HTTP server's), which l.wg already
	// counts until it returns.
	pc := l.admit.wrap(&wsConn{Conn: c.UnderlyingConn(), ws: c})
	(&connection{listener: l.id, c: pc, establish: l.establish, log: l.log}).serve()
}

// Serve sets the establish func before the first connection can arrive.
// http.Server retries temporary accept errors itself.
func (l *wsListener) Serve(establish listeners.EstablishFn) {
	l.establish = establish
	l.health.serving.Store(true)
	defer l.health.serving.Store(false)
	if err := l.srv.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		l.health.failed(err)
		l.log.Error("mqtt-over-websocket listener stopped", "listener", l.id, "error", err)
	}
}

// Close stops the HTTP server and waits for the connections to end; see
// tcpListener.Close for why clients are not closed here.
func (l *wsListener) Close(listeners.CloseFn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
	_ = l.ln.Close()
	l.wg.Wait()
}

// wsConn presents a websocket as the byte stream mochi reads MQTT packets
// from: binary frames only, one frame may hold part of a packet or several.
type wsConn struct {
	net.Conn
	ws *websocket.Conn
	r  io.Reader
}

var errTextFrame = errors.New("mqtt over websocket: text frame")

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			op, r, err := c.ws.NextReader()
			if err != nil {
				return 0, err
			}
			if op != websocket.BinaryMessage {
				return 0, errTextFrame
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if errors.Is(err, io.EOF) {
			c.r = nil
			if n == 0 {
				continue
			}
			return n, nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// listenerHealth is what /healthz reports of a listener: whether it is
// serving and the accept error it is backing off from, if any.
type listenerHealth struct {
	serving atomic.Bool
	mu      sync.Mutex // guards lastErr
	lastErr string
}

// failed records err and reports whether it is the first of a run (worth a
// log line; the rest of the run is only retried).
func (h *listenerHealth) failed(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.lastErr == ""
	h.lastErr = err.Error()
	return first
}

func (h *listenerHealth) recovered() {
	h.mu.Lock()
	h.lastErr = ""
	h.mu.Unlock()
}

// state returns the listener's health.
func (h *listenerHealth) state(id, addr string) ListenerHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return ListenerHealth{ID: id, Address: addr, Serving: h.serving.Load(), Error: h.lastErr}
}
