package gatewayd

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"

	"github.com/chorus-edge/chorus/gateway/advertise"
)

// defaultPort is each MQTT scheme's port when an external broker's URL has none.
var defaultPort = map[string]string{"mqtt": "1883", "tcp": "1883", "mqtts": "8883", "ssl": "8883", "tls": "8883", "ws": "80", "wss": "443"}

// advertised decides the URLs other machines get (gateway/advertise): the
// explicit ones of the config, else derived from the listeners. Each is
// logged with where it came from; one that only this machine can use is a
// WARN (INFO under `chorus up`), so an operator sees it before enrolling a
// satellite with it.
func (m *Main) advertised(ln net.Listener, tlsCfg *tls.Config) (mqttURL, httpURL string, err error) {
	cfg := m.cfg.Config
	var mq advertise.Result
	switch {
	case m.ext != nil && cfg.Broker.Advertise == "":
		u := m.ext.URL()
		mq = advertise.Result{URL: u, Source: "--mqtt-url", Warning: advertise.LocalOnly(u)}
	case m.ext != nil:
		scheme, hostPort, _ := strings.Cut(m.ext.URL(), "://")
		if i := strings.IndexByte(hostPort, '/'); i >= 0 {
			hostPort = hostPort[:i]
		}
		if _, _, perr := net.SplitHostPort(hostPort); perr != nil {
			hostPort = net.JoinHostPort(strings.Trim(hostPort, "[]"), defaultPort[scheme])
		}
		mq, err = advertise.Resolve(scheme, hostPort, cfg.Broker.Advertise, m.cfg.Host)
	default:
		scheme, _, _ := strings.Cut(m.broker.URL(), "://")
		mq, err = advertise.Resolve(scheme, m.broker.Addr(), cfg.Broker.Advertise, m.cfg.Host)
	}
	if err != nil {
		return "", "", err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	ht, err := advertise.Resolve(scheme, ln.Addr().String(), cfg.HTTP.Advertise, m.cfg.Host)
	if err != nil {
		return "", "", err
	}
	for _, r := range []struct {
		what string
		r    advertise.Result
	}{{"mqtt", mq}, {"http", ht}} {
		m.log.Info("advertising "+r.what+" to devices", "url", r.r.URL, "from", r.r.Source)
		if r.r.Warning != "" {
			// `chorus up` is one machine by design: said at INFO there;
			// `device add` repeats it for credentials written anyway.
			level := slog.LevelWarn
			if m.cfg.LocalDevice != "" {
				level = slog.LevelInfo
			}
			m.log.Log(context.Background(), level, "advertised "+r.what+" address is local to this machine", "detail", r.r.Warning)
		}
	}
	return mq.URL, ht.URL, nil
}
