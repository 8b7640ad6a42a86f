package configs

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chorus-edge/chorus/device/skilluser"
)

// Config is the whole chorus.json. Every role reads the sections it needs.
// Key names follow OVOS's mycroft.conf where the concept is the same
// (skills.blacklisted_skills, websocket.host/port/route/max_msg_size).
// Durations are seconds, as in mycroft.conf.
type Config struct {
	DataDir string `json:"data_dir"`
	// MemoryLimit is the Go runtime's soft memory limit for this process,
	// as GOMEMLIMIT writes it ("256MiB"; "" or "off" = none; GOMEMLIMIT in
	// the environment wins). See ParseMemoryLimit.
	MemoryLimit   string        `json:"memory_limit"`
	Log           Log           `json:"log"`
	Broker        Broker        `json:"broker"`
	HTTP          HTTP          `json:"http"`
	Websocket     Websocket     `json:"websocket"`
	Skills        Skills        `json:"skills"`
	Connectivity  Connectivity  `json:"connectivity"`
	HomeAssistant HomeAssistant `json:"homeassistant"`
	Bridge        Bridge        `json:"bridge"`
	Presence      Presence      `json:"presence"`
	Agent         Agent         `json:"agent"`
	// ReadySettings is OVOS's ready_settings: what the agent waits for
	// before it emits mycroft.ready (device/skillmanager ready.go).
	ReadySettings []string `json:"ready_settings"`
}

// HomeAssistant configures the controller's Home Assistant discovery (gateway only).
type HomeAssistant struct {
	Enabled bool   `json:"enabled"`
	Prefix  string `json:"prefix"` // the discovery prefix; Home Assistant's default is homeassistant
}

// Bridge configures the satellite-to-hub relay and the topic migration twins (gateway only).
type Bridge struct {
	Twins         string            `json:"twins"`           // off, legacy-to-v1 or both, for every device bus
	TwinsByDevice map[string]string `json:"twins_by_device"` // per-device override
	Grace         Seconds           `json:"grace"`           // an offline satellite's grace period
	Hold          int               `json:"hold"`            // messages held per offline satellite
	Rate          float64           `json:"rate"`            // inbound messages a second per route
	Burst         int               `json:"burst"`
}

// Presence configures how the gateway judges devices online (gateway only;
// docs/topics.md, Presence).
type Presence struct {
	// Grace is how long after the gateway starts a device marked online
	// may go without a live connection before it is marked offline.
	Grace Seconds `json:"grace"`
}

// Agent configures the agent's own connection to the broker (agent only).
// How soon a lost device shows offline is about 1.5 × keepalive (the
// broker's detection [MQTT-3.1.2-22]) plus will_delay.
type Agent struct {
	KeepAlive Seconds `json:"keepalive"`  // MQTT keepalive, whole seconds, 5 to 600
	WillDelay Seconds `json:"will_delay"` // the Will's delay before offline is published, 1 to 300
}

// Log configures logging.
type Log struct {
	Level  string `json:"level"`  // debug, info, warn, error
	Format string `json:"format"` // text, json
}

// Broker configures the embedded MQTT broker (gateway only).
type Broker struct {
	MQTTListen string `json:"mqtt_listen"`
	WSListen   string `json:"ws_listen"` // MQTT over websocket; "" = off
	// Advertise is the MQTT address other machines are given (a URL, or a
	// host or host:port); "" = derived from the listener (gateway/advertise).
	Advertise        string `json:"advertise"`
	TLS              TLS    `json:"tls"`
	MaxPacketSize    int64  `json:"max_packet_size"`    // bytes
	MaxMessageExpiry int64  `json:"max_message_expiry"` // seconds, non-retained messages only
	MaxInflight      int64  `json:"max_inflight"`
	MaxWritesPending int64  `json:"max_writes_pending"`
	MaxClients       int64  `json:"max_clients"`

	// Limits before authentication and per client (docs/security.md);
	// 0 takes the broker's default.
	ConnectTimeout     Seconds `json:"connect_timeout"`      // from accept to an authenticated CONNECT
	MaxConnectSize     int64   `json:"max_connect_size"`     // bytes of a CONNECT before authentication
	MaxPendingConnects int64   `json:"max_pending_connects"` // connections not yet authenticated
	MaxTopicLength     int64   `json:"max_topic_length"`     // bytes, topic names and filters
	MaxQueuedBytes     int64   `json:"max_queued_bytes"`     // payload bytes queued towards one client
	MaxJSONDepth       int64   `json:"max_json_depth"`
	SlowClientTimeout  Seconds `json:"slow_client_timeout"` // seconds of dropping messages without a pause before a client is cut; -1 = never
	// Limits per role: device, skill, integration, operator.
	Limits map[string]RoleLimits `json:"limits"`
}

// RoleLimits are the broker's limits of one role (docs/security.md,
// "Limits per account"). 0 takes the default; -1 turns a limit off.
type RoleLimits struct {
	Connections      int64   `json:"connections"`        // live connections per account
	PublishRate      float64 `json:"publish_rate"`       // messages a second per account
	PublishBurst     int64   `json:"publish_burst"`      // messages
	MaxBusPayload    int64   `json:"max_bus_payload"`    // bytes of one bus message
	Subscriptions    int64   `json:"subscriptions"`      // filters per client
	MaxSessionExpiry int64   `json:"max_session_expiry"` // seconds
}

// Roles are the keys of Broker.Limits.
var Roles = []string{"device", "skill", "integration", "operator"}

// TLS names a certificate and key in PEM files; both empty = plain.
type TLS struct {
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
}

// HTTP configures the gateway's HTTP server.
type HTTP struct {
	Listen string `json:"listen"`
	// Advertise is the HTTP address other machines are given; "" = derived
	// from the listener (gateway/advertise).
	Advertise string `json:"advertise"`
	TLS       TLS    `json:"tls"`
}

// Websocket is the agent's OVOS websocket drop-in, as mycroft.conf's section.
type Websocket struct {
	Host       string `json:"host"`
	Port       int    `json:"port"`
	Route      string `json:"route"`        // the base of the routes (docs/ovos.md)
	MaxMsgSize int    `json:"max_msg_size"` // MB, as mycroft.conf: 1 to 25
	Disabled   bool   `json:"disabled"`
	// ServicesUsers are the users (names or uids) the device's OVOS
	// services run as: only their connections get the device's authority.
	ServicesUsers []string `json:"services_users"`
	// ServicesConfig is where the agent writes the services' mycroft.conf
	// holding their route, owned by the first services user, mode 0600
	// ("" = <data_dir>/ovos/mycroft/mycroft.conf; docs/ovos.md).
	ServicesConfig string `json:"services_config"`
}

// Skills configures the agent's skill manager (SKILL_MANAGER.md).
type Skills struct {
	BlacklistedSkills    []string  `json:"blacklisted_skills"`
	Capabilities         []string  `json:"capabilities"`
	ReadyTimeout         Seconds   `json:"ready_timeout"`
	StopGrace            Seconds   `json:"stop_grace"`
	ScanInterval         Seconds   `json:"scan_interval"`
	TrainTimeout         Seconds   `json:"train_timeout"`
	SettingsRoot         string    `json:"settings_root"`
	WaitForIntentService bool      `json:"wait_for_intent_service"`
	Installer            Installer `json:"installer"`
	// Credentials is the form of the MQTT credentials the agent mints for
	// its skills (gateway/skillcred): "signed" (the default; an Ed25519
	// signature, so the broker holds nothing that can mint them) or
	// "derived" (an HMAC keyed with the device secret's hash, which an
	// external broker's exported static passwords need; docs/security.md).
	Credentials string `json:"credentials"`
	// Isolation is how skill processes are separated from the agent
	// (docs/security.md, "Skill isolation"): "auto" (the default: each
	// skill under its own uid when the agent can switch uids, else as the
	// agent's user, with a warning), "uid" (refuse to start without it) or
	// "none".
	Isolation string `json:"isolation"`
	// UIDRange is the reserved range the skills' uids come from,
	// "FIRST-LAST" (device/skilluser.DefaultRange).
	UIDRange string `json:"uid_range"`
	// OVOS runs the skills whose SKILL.md says runtime: ovos (docs/ovos.md).
	OVOS OVOSRuntime `json:"ovos"`
}

// OVOSRuntime configures how the agent runs stock OVOS skills.
type OVOSRuntime struct {
	// Launcher is ovos-skill-launcher in the satellite's OVOS venv, e.g.
	// /opt/ovos/venv/bin/ovos-skill-launcher; "" = runtime ovos skills fail
	// to start with an error naming this key.
	Launcher string `json:"launcher"`
	// Python runs pip for the skills' wheels (the venv's bin/python3);
	// "" = the python3 next to Launcher.
	Python string `json:"python"`
	// PassEnv names the variables a launcher inherits from the agent.
	PassEnv []string `json:"pass_env"`
	// Env is added to every launcher's environment (a PYTHONPATH here comes
	// after the skill's own packages).
	Env map[string]string `json:"env"`
	// LoadTimeout bounds a load, from the launcher's start to its
	// mycroft.skills.loaded.
	LoadTimeout Seconds `json:"load_timeout"`
	// Shared lists the trusted skills run together in one Python process
	// (the shared host), each with its own bus connection and identity;
	// "*" = every runtime ovos skill. Empty: one process per skill.
	Shared []string `json:"shared"`
}

// SharedOVOS reports whether skill runs in the shared host.
func (o OVOSRuntime) SharedOVOS(skill string) bool {
	for _, s := range o.Shared {
		if s == "*" || s == skill {
			return true
		}
	}
	return false
}

// Installer gates install requests arriving on the bus (SKILL_MANAGER.md §10).
type Installer struct {
	AllowPip bool `json:"allow_pip"`
}

// Connectivity configures the agent's connectivity checks (SKILL_MANAGER.md §5).
type Connectivity struct {
	PHALTimeout   Seconds  `json:"phal_timeout"`
	CheckURLs     []string `json:"check_urls"`
	CheckInterval Seconds  `json:"check_interval"`
}

// Seconds is a duration written as a number of seconds.
type Seconds float64

// Duration converts s.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// Default returns the configuration used when no file is given.
func Default() Config {
	return Config{
		DataDir: DefaultDataDir,
		Log:     Log{Level: "info", Format: "text"},
		Broker: Broker{
			MQTTListen: "0.0.0.0:1883", MaxPacketSize: 10<<20 + 64<<10, MaxMessageExpiry: 86400,
			MaxInflight: 1024, MaxWritesPending: 1024, MaxClients: 50000,
			Limits: map[string]RoleLimits{}, // the other limits: 0 = the broker's defaults (docs/security.md)
		},
		HTTP:      HTTP{Listen: "0.0.0.0:8080"},
		Websocket: Websocket{Host: "127.0.0.1", Port: 8181, Route: "/core", MaxMsgSize: 10, ServicesUsers: []string{}},
		Skills: Skills{
			BlacklistedSkills: []string{}, Capabilities: []string{},
			ReadyTimeout: 10, StopGrace: 5, ScanInterval: 30, TrainTimeout: 60, Credentials: "signed",
			Isolation: "auto", UIDRange: skilluser.DefaultRange,
			OVOS: OVOSRuntime{PassEnv: []string{"PATH", "LANG", "LC_ALL", "TZ"}, Env: map[string]string{}, LoadTimeout: 120, Shared: []string{}},
		},
		Connectivity:  Connectivity{PHALTimeout: 3, CheckURLs: []string{}, CheckInterval: 60},
		HomeAssistant: HomeAssistant{Enabled: true, Prefix: "homeassistant"},
		Bridge:        Bridge{Twins: "off", TwinsByDevice: map[string]string{}, Grace: 30, Hold: 64, Rate: 10, Burst: 20},
		Presence:      Presence{Grace: 20},
		Agent:         Agent{KeepAlive: 30, WillDelay: 5},
		ReadySettings: []string{"skills"},
	}
}

// Load reads path over the defaults. A missing file means defaults. Unknown
// keys are returned as warnings; a wrong type or an invalid value is an error
// naming the key path.
func Load(path string) (Config, []string, error) {
	cfg := Default()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil, nil
	}
	if err != nil {
		return cfg, nil, fmt.Errorf("config %s: %w", path, err)
	}
	warnings, err := Parse(b, &cfg)
	if err != nil {
		return cfg, warnings, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, warnings, nil
}

// Parse decodes b over cfg and validates the result.
func Parse(b []byte, cfg *Config) (warnings []string, err error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: data after the top-level object")
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, errors.New("the top level must be a JSON object")
	}
	warnings = unknownKeys(raw, cfg)
	if err := json.Unmarshal(b, cfg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return warnings, fmt.Errorf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return warnings, err
	}
	return warnings, cfg.Validate()
}

// Config loads the certificate pair, or returns nil when none is configured.
func (t TLS) Config() (*tls.Config, error) {
	if t.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s: %w", t.CertFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
