package configs

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
	"sort"
	"strings"

	"github.com/chorus-edge/chorus/device/skilluser"
	"github.com/chorus-edge/chorus/gateway/advertise"
)

// Validate checks every value; the error names the key path and the reason.
func (c Config) Validate() error {
	checks := []struct {
		key string
		err error
	}{
		{"data_dir", nonEmpty(c.DataDir)},
		{"memory_limit", memoryLimit(c.MemoryLimit)},
		{"log.level", oneOf(c.Log.Level, "debug", "info", "warn", "error")},
		{"log.format", oneOf(c.Log.Format, "text", "json")},
		{"broker.mqtt_listen", hostPort(c.Broker.MQTTListen, false)},
		{"broker.ws_listen", hostPort(c.Broker.WSListen, true)},
		{"broker.tls", tlsPair(c.Broker.TLS)},
		{"broker.advertise", advertised("mqtt", c.Broker.Advertise)},
		{"broker.max_packet_size", between(c.Broker.MaxPacketSize, 1024, 268435455)},
		{"broker.max_message_expiry", between(c.Broker.MaxMessageExpiry, 0, 1<<32-1)},
		{"broker.max_inflight", between(c.Broker.MaxInflight, 1, 65535)},
		{"broker.max_writes_pending", between(c.Broker.MaxWritesPending, 1, 1<<31-1)},
		{"broker.max_clients", between(c.Broker.MaxClients, 1, 1<<40)},
		{"broker.connect_timeout", notNegative(c.Broker.ConnectTimeout)},
		{"broker.max_connect_size", between(c.Broker.MaxConnectSize, 0, 268435455)},
		{"broker.max_pending_connects", between(c.Broker.MaxPendingConnects, 0, 1<<31-1)},
		{"broker.max_topic_length", between(c.Broker.MaxTopicLength, 0, 65535)},
		{"broker.max_queued_bytes", between(c.Broker.MaxQueuedBytes, 0, 1<<40)},
		{"broker.max_json_depth", between(c.Broker.MaxJSONDepth, 0, 10000)},
		{"broker.slow_client_timeout", timeoutOrOff(c.Broker.SlowClientTimeout)},
		{"broker.limits", roleLimits(c.Broker.Limits)},
		{"http.listen", hostPort(c.HTTP.Listen, false)},
		{"http.tls", tlsPair(c.HTTP.TLS)},
		{"http.advertise", advertised("http", c.HTTP.Advertise)},
		{"websocket.port", between(int64(c.Websocket.Port), 0, 65535)},
		{"websocket.route", route(c.Websocket.Route)},
		{"websocket.max_msg_size", between(int64(c.Websocket.MaxMsgSize), 1, 25)},
		{"skills.ready_timeout", positive(c.Skills.ReadyTimeout)},
		{"skills.stop_grace", positive(c.Skills.StopGrace)},
		{"skills.scan_interval", positive(c.Skills.ScanInterval)},
		{"skills.train_timeout", positive(c.Skills.TrainTimeout)},
		{"skills.credentials", oneOf(c.Skills.Credentials, "signed", "derived")},
		{"skills.isolation", oneOf(c.Skills.Isolation, "auto", "uid", "none")},
		{"skills.uid_range", uidRange(c.Skills.UIDRange)},
		{"skills.ovos.launcher", absPathOrEmpty(c.Skills.OVOS.Launcher)},
		{"skills.ovos.python", absPathOrEmpty(c.Skills.OVOS.Python)},
		{"skills.ovos.pass_env", envNames(c.Skills.OVOS.PassEnv)},
		{"skills.ovos.env", envMap(c.Skills.OVOS.Env)},
		{"skills.ovos.load_timeout", positive(c.Skills.OVOS.LoadTimeout)},
		{"connectivity.phal_timeout", notNegative(c.Connectivity.PHALTimeout)},
		{"connectivity.check_interval", positive(c.Connectivity.CheckInterval)},
		{"connectivity.check_urls", httpURLs(c.Connectivity.CheckURLs)},
		{"homeassistant.prefix", haPrefix(c.HomeAssistant.Prefix)},
		{"bridge.twins", oneOf(c.Bridge.Twins, "off", "legacy-to-v1", "both")},
		{"bridge.twins_by_device", twinModes(c.Bridge.TwinsByDevice)},
		{"bridge.grace", positive(c.Bridge.Grace)},
		{"bridge.hold", between(int64(c.Bridge.Hold), 0, 100000)},
		{"bridge.rate", positive(Seconds(c.Bridge.Rate))},
		{"bridge.burst", between(int64(c.Bridge.Burst), 1, 100000)},
		{"presence.grace", positive(c.Presence.Grace)},
		{"agent.keepalive", wholeSeconds(c.Agent.KeepAlive, 5, 600)},
		{"agent.will_delay", wholeSeconds(c.Agent.WillDelay, 1, 300)},
		{"ready_settings", CheckReadySettings(c.ReadySettings)},
	}
	for _, ch := range checks {
		if ch.err != nil {
			return fmt.Errorf("%s: %w", ch.key, ch.err)
		}
	}
	return nil
}

// advertised checks an advertised address ("" = derived).
func advertised(scheme, v string) error {
	if v == "" {
		return nil
	}
	_, err := advertise.Resolve(scheme, "0.0.0.0:1", v, advertise.Host{})
	return err
}

func nonEmpty(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	return nil
}

func oneOf(s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
}

func hostPort(s string, optional bool) error {
	if s == "" && optional {
		return nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	return nil
}

func tlsPair(t TLS) error {
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("cert_file and key_file go together")
	}
	return nil
}

func between(v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("%d is outside %d..%d", v, lo, hi)
	}
	return nil
}

func positive(s Seconds) error {
	if s <= 0 {
		return fmt.Errorf("%v seconds: must be positive", float64(s))
	}
	return nil
}

// wholeSeconds accepts a whole number of seconds from lo to hi (MQTT
// carries keepalive and Will delay in whole seconds).
func wholeSeconds(s Seconds, lo, hi int) error {
	if s != Seconds(int(s)) || int(s) < lo || int(s) > hi {
		return fmt.Errorf("%v seconds: want a whole number from %d to %d", float64(s), lo, hi)
	}
	return nil
}

func notNegative(s Seconds) error {
	if s < 0 {
		return fmt.Errorf("%v seconds: must not be negative", float64(s))
	}
	return nil
}

func route(r string) error {
	if !strings.HasPrefix(r, "/") {
		return fmt.Errorf("%q must start with /", r)
	}
	return nil
}

func httpURLs(urls []string) error {
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	return nil
}

// unknownKeys lists the key paths of raw that no field of cfg's type declares.
func unknownKeys(raw any, cfg any) []string {
	var out []string
	walkKeys("", raw, reflect.TypeOf(cfg).Elem(), &out)
	sort.Strings(out)
	return out
}

func walkKeys(prefix string, raw any, t reflect.Type, out *[]string) {
	obj, ok := raw.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Type
	}
	for k, v := range obj {
		ft, known := fields[k]
		if !known {
			*out = append(*out, fmt.Sprintf("unknown key %s%s (ignored)", prefix, k))
			continue
		}
		walkKeys(prefix+k+".", v, ft, out)
	}
}

func uidRange(s string) error {
	_, err := skilluser.ParseRange(s)
	return err
}

func haPrefix(p string) error {
	if p == "" || strings.ContainsAny(p, "+#") || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q is not a topic prefix", p)
	}
	return nil
}

func twinModes(m map[string]string) error {
	for dev, mode := range m {
		if err := oneOf(mode, "off", "legacy-to-v1", "both"); err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
	}
	return nil
}

// roleLimits checks broker.limits: known roles, and each value 0 (default),
// -1 (off, where a limit can be off) or in range.
func roleLimits(m map[string]RoleLimits) error {
	for _, role := range sortedKeys(m) {
		l := m[role]
		if oneOf(role, Roles...) != nil {
			return fmt.Errorf("unknown role %q: the roles are %s", role, strings.Join(Roles, ", "))
		}
		checks := []struct {
			key string
			err error
		}{
			{"connections", between(l.Connections, -1, 1<<20)},
			{"publish_rate", rate(l.PublishRate)},
			{"publish_burst", between(l.PublishBurst, 0, 1<<30)},
			{"max_bus_payload", between(l.MaxBusPayload, 0, 268435455)},
			{"subscriptions", between(l.Subscriptions, -1, 1<<30)},
			{"max_session_expiry", between(l.MaxSessionExpiry, -1, 1<<32-1)},
		}
		for _, ch := range checks {
			if ch.err != nil {
				return fmt.Errorf("%s.%s: %w", role, ch.key, ch.err)
			}
		}
	}
	return nil
}

func rate(r float64) error {
	if r != r || (r < 0 && r != -1) {
		return fmt.Errorf("%v: must be a number of messages a second, or -1 for no limit", r)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// timeoutOrOff accepts seconds >= 0 (0 = the default) or -1 (never).
func timeoutOrOff(s Seconds) error {
	if s < 0 && s != -1 {
		return fmt.Errorf("%v: must be seconds, 0 for the default or -1 for never", float64(s))
	}
	return nil
}

func memoryLimit(s string) error {
	_, _, err := ParseMemoryLimit(s)
	return err
}
