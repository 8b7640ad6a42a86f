// Package httpapi is the gateway's HTTP server: /healthz, the fleet API of
// docs/api.md (operator bearer token) and artifact downloads (device Basic
// auth). It reaches the controller through the Fleet interface, so it does
// not import fleet/controller.
package httpapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chorus-edge/chorus/fleet/api"
)

// Config configures the server.
type Config struct {
	Listen string // host:port
	// Listener, when set, is used instead of binding Listen (the gateway
	// binds first so the controller knows the server's URL).
	Listener net.Listener
	TLS      *tls.Config // nil = plain HTTP
	Version  string
	// MQTT, when set, describes the broker on /healthz (its counters, or
	// the external broker's URL).
	MQTT func() *api.MQTTHealth
	// Failing lists the parts of the gateway that do not work (a broker
	// listener, the broker's in-process client or store, the fleet
	// database); any makes /healthz answer 503.
	Failing func() []string
	Logger  *slog.Logger

	// Fleet serves the /v1 API; nil serves /healthz only.
	Fleet Fleet
	// Token is the operator bearer token; empty refuses every operator request.
	Token string
	// VerifyDevice checks a device's own MQTT username and secret for
	// artifact downloads (the controller's VerifyDevice).
	VerifyDevice func(username, password string) bool
	// Exports serves the Mosquitto exports; nil answers them 404.
	Exports Exports
	// BrokerAuth serves the EMQX-shaped auth endpoints; nil answers them 404.
	BrokerAuth BrokerAuth
	// Metrics is served on GET /metrics, unauthenticated (metrics.go); nil
	// serves no /metrics.
	Metrics prometheus.Gatherer
	// UI serves every path no route above takes (fleet/dashboard at /);
	// nil answers them 404.
	UI http.Handler

	// JoinRate and JoinBurst limit POST /v1/join and its polls per client
	// address (zero: api.JoinRate and api.JoinBurst); Now is the limiter's
	// clock (time.Now).
	JoinRate  float64
	JoinBurst int
	Now       func() time.Time
}

// Server is a running HTTP server.
type Server struct {
	cfg       Config
	joinLimit *limiter
	ln        net.Listener
	srv       *http.Server
	wg        sync.WaitGroup
	once      sync.Once
}

// Start binds cfg.Listen and serves. A port in use is an error.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("listen http on %s: %w", cfg.Listen, err)
		}
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	if cfg.JoinRate == 0 {
		cfg.JoinRate = api.JoinRate
	}
	if cfg.JoinBurst == 0 {
		cfg.JoinBurst = api.JoinBurst
	}
	s := &Server{cfg: cfg, ln: ln, joinLimit: newLimiter(cfg.JoinRate, cfg.JoinBurst, cfg.Now)}
	s.srv = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("http server stopped", "error", err)
		}
	}()
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	s.metricsRoute(mux)
	if s.cfg.Fleet != nil {
		s.fleetRoutes(mux)
	}
	if s.cfg.UI != nil {
		mux.Handle("/", s.cfg.UI)
	}
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	body := api.Health{Status: "ok", Version: s.cfg.Version}
	if s.cfg.MQTT != nil {
		body.MQTT = s.cfg.MQTT()
	}
	if s.cfg.Failing != nil {
		body.Failing = s.cfg.Failing()
	}
	code := http.StatusOK
	if len(body.Failing) > 0 {
		body.Status, code = "degraded", http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Addr returns the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the server's base URL.
func (s *Server) URL() string {
	if s.cfg.TLS != nil {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Close shuts the server down, waiting for in-flight requests up to ctx.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		err = s.srv.Shutdown(ctx)
		s.wg.Wait()
	})
	return err
}
