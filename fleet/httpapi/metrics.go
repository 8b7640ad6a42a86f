package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsTimeout bounds one scrape; the fleet collector queries the store.
const metricsTimeout = 15 * time.Second

// metricsRoute serves GET /metrics in the Prometheus text format (or
// OpenMetrics when the scraper asks for it) when Config.Metrics is set.
//
// It takes no credentials, like /healthz, so any Prometheus can scrape it
// on the gateway's HTTP listener. It reveals counts only (devices, skills,
// rollouts and executions by state, broker traffic, reconcile latency),
// never an id, a name or a secret. To restrict it, bind http.listen to a
// private address or put a reverse proxy in front that only lets the
// scraper through (docs/api.md).
func (s *Server) metricsRoute(mux *http.ServeMux) {
	if s.cfg.Metrics == nil {
		return
	}
	h := promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{
		ErrorLog:            slogPrinter{s},
		ErrorHandling:       promhttp.ContinueOnError, // a failed store query still serves the rest
		MaxRequestsInFlight: 2,
		Timeout:             metricsTimeout,
	})
	mux.Handle("GET /metrics", h)
}

// slogPrinter is the promhttp.Logger that reports collection errors.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) {
	p.s.cfg.Logger.Warn("metrics", "error", fmt.Sprint(v...))
}
