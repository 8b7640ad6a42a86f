package wsbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// greeting is the first frame of every connection, byte for byte what
// ovos-messagebus sends on open (BUS.md §3, ovos-behaviour §3.3).
const greeting = `{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}`

// Server is the OVOS websocket endpoint of one device's bus. It is safe for
// concurrent use; it runs until Close.
type Server struct {
	cfg      Config
	log      *slog.Logger
	ln       net.Listener
	http     *http.Server
	upgrader websocket.Upgrader
	greeting *websocket.PreparedMessage
	expiry   uint32 // MQTT message expiry, seconds
	secret   []byte // keys the routes (auth.go)
	budget   *budget

	unsubscribe func()
	ctx         context.Context // lifetime of the server; Close cancels it
	cancel      context.CancelFunc
	wg          sync.WaitGroup // every goroutine the server started
	closeOnce   sync.Once

	// mu guards closed, clients and conns. Nothing does I/O while holding it.
	mu      sync.Mutex
	closed  bool
	clients map[*client]struct{}
	conns   int // connections being served, for MaxClients
}

// Start validates cfg, binds cfg.Listen (an address in use is an error),
// subscribes to the device's bus filter on cfg.Transport and serves
// ws://<Addr()><Route>. ctx bounds start-up only; the server runs until
// Close. The subscription is in place before the first client can connect.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("start websocket bus: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("start websocket bus: listen on %s: %w", cfg.Listen, err)
	}
	s, err := newServer(cfg, ln)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if err := s.subscribe(ctx); err != nil {
		s.cancel()
		_ = ln.Close()
		return nil, err
	}
	s.serve()
	s.log.Info("websocket bus listening", "addr", s.Addr(), "device", cfg.Device, "max_frame", cfg.MaxFrame)
	if limit := cfg.MaxPacket - PacketHeadroom; cfg.MaxFrame > limit {
		s.log.Warn("websocket.max_msg_size is over what the broker carries: larger frames will be refused (raise broker.max_packet_size on the gateway)",
			"max_frame", cfg.MaxFrame, "broker_max_packet", cfg.MaxPacket, "largest_frame", limit)
	}
	return s, nil
}

func newServer(cfg Config, ln net.Listener) (*Server, error) {
	g, err := websocket.NewPreparedMessage(websocket.TextMessage, []byte(greeting))
	if err != nil {
		return nil, fmt.Errorf("start websocket bus: prepare greeting: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "wsbus"),
		ln:       ln,
		greeting: g,
		expiry:   uint32(cfg.MessageExpiry / time.Second),
		secret:   cfg.Secret,
		budget:   newBudget(cfg.FrameBudget),
		clients:  make(map[*client]struct{}),
	}
	if s.secret == nil {
		s.secret = newSecret()
	}
	// ovos-messagebus's check_origin returns True and OVOS clients send no
	// Origin; a browser page cannot learn a route, so the routes are the
	// protection (auth.go).
	s.upgrader.CheckOrigin = func(*http.Request) bool { return true }
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: readHeaderTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// subscribe routes every message on the device's bus to the clients.
func (s *Server) subscribe(ctx context.Context) error {
	filter, err := topic.BusFilter(s.cfg.Device)
	if err != nil {
		return fmt.Errorf("start websocket bus: %w", err)
	}
	unsub, err := s.cfg.Transport.Subscribe(ctx, filter, s.deliver)
	if err != nil {
		return fmt.Errorf("start websocket bus: subscribe %s: %w", filter, err)
	}
	if unsub == nil {
		unsub = func() {}
	}
	s.unsubscribe = unsub
	return nil
}

func (s *Server) serve() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("websocket bus stopped serving", "err", err)
		}
	}()
}

// Addr returns the address the server listens on (host:port), useful when
// Listen asked for port 0.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server: it unsubscribes from the bus, stops listening and
// drops every connection without a close frame (BUS.md §3: ovos-bus-client
// reconnects only after an abrupt drop). It is idempotent, and returns after
// every goroutine the server started has exited.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.unsubscribe()
		clients := s.markClosed()
		s.cancel()
		err = s.http.Close()
		for _, c := range clients {
			c.kill()
		}
		s.wg.Wait()
		s.log.Info("websocket bus closed", "addr", s.Addr())
	})
	if err != nil {
		return fmt.Errorf("close websocket bus: %w", err)
	}
	return nil
}

// markClosed refuses new clients and returns the current ones.
func (s *Server) markClosed() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.snapshotLocked()
}
