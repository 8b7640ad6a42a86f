package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Defaults for Config; ARCHITECTURE.md §3 fixes the ports.
const (
	DefaultMQTTListen     = "0.0.0.0:1883"
	DefaultWSPath         = "/mqtt"
	DefaultMaxPacketSize  = 10<<20 + 64<<10 // 10 MiB of payload plus headroom for topic and properties
	DefaultMaxExpiry      = 86400           // seconds, for non-retained messages only
	DefaultMaxInflight    = 1024
	DefaultWritesPending  = 1024 // also the per-client memory knob (reference/go-deps.md §6)
	DefaultMaxClients     = 50000
	minMaxPacketSize      = 1024
	maxMQTTPacketSize     = 268435455 // the largest remaining length MQTT can encode
	defaultReceiveMaximum = 1024
)

// Defaults of the per-role limits (docs/security.md, "Limits per account").
// A device's agent carries all of its local OVOS services' bus traffic;
// integrations and operators are fleet-owner credentials that may address
// many devices at once. Skills are third-party code and get less.
var (
	DefaultDeviceLimits = RoleLimits{
		Connections: 2, PublishRate: 200, PublishBurst: 400,
		Subscriptions: 64, MaxSessionExpiry: 7 * 24 * 3600,
	}
	// A skill has two doors to its device's bus: its own MQTT session and
	// its route on the agent's websocket drop-in, which the agent relays
	// over an MQTT session with the skill's credentials.
	DefaultSkillLimits = RoleLimits{
		Connections: 2, PublishRate: 50, PublishBurst: 100, MaxBusPayload: 1 << 20,
		Subscriptions: 16, MaxSessionExpiry: 300,
	}
	// Home Assistant subscribes per entity: tens of thousands on a big fleet.
	DefaultIntegrationLimits = RoleLimits{
		Connections: 16, PublishRate: 200, PublishBurst: 400,
		Subscriptions: 50000, MaxSessionExpiry: 7 * 24 * 3600,
	}
	DefaultOperatorLimits = RoleLimits{
		Connections: 16, PublishRate: 200, PublishBurst: 400,
		Subscriptions: 1000, MaxSessionExpiry: 24 * 3600,
	}
)

// Defaults of the connection and queue limits.
const (
	// Bus payload caps (limits.go). The device cap leaves the packet size's
	// headroom for topic and properties, so an OVOS websocket frame of 10 MiB
	// relayed by the agent still fits.
	busHeadroom = 64 << 10
	// The envelope's own limit, so the broker never refuses a message every
	// bus client would accept; it protects subscribers that decode JSON
	// without the envelope (Home Assistant, scripts).
	DefaultMaxJSONDepth = envelope.MaxDepth

	DefaultConnectTimeout     = 10 * time.Second // from accept to an authenticated CONNECT
	DefaultMaxConnectSize     = 16 << 10         // a CONNECT before authentication, bytes
	DefaultMaxPendingConnects = 1024             // connections that have not authenticated yet
	DefaultMaxTopicLength     = 1024             // bytes, topic names and filters
	DefaultMaxQueuedBytes     = 16 << 20         // payload bytes queued towards one client
	DefaultSlowClientTimeout  = 30 * time.Second // dropping messages this long without a pause: cut
)

// RoleLimits are the limits of one role. A zero field takes the role's
// default; a negative one turns that limit off.
type RoleLimits struct {
	// Connections is the number of live connections per account. A
	// reconnect with the same client id takes over its own session and is
	// not counted twice.
	Connections int
	// PublishRate and PublishBurst are a token bucket per account shared
	// by all its connections: refilled at PublishRate messages per second,
	// holding at most PublishBurst.
	PublishRate  float64
	PublishBurst int
	// MaxBusPayload caps bus messages (chorus/v1/<device>/bus/<type>),
	// bytes; 0 takes the packet size less 64 KiB (10 MiB at the default
	// packet size) for every role but skills (1 MiB).
	MaxBusPayload int
	// Subscriptions caps the filters one client holds.
	Subscriptions int
	// MaxSessionExpiry caps the MQTT 5 session expiry a client asks for,
	// seconds; the CONNACK tells the client the value it got.
	MaxSessionExpiry int64
}

// Config configures a Broker. The zero value works: an MQTT listener on the
// default port, no websocket, no TLS, nothing persisted.
type Config struct {
	MQTTListen string // host:port of the TCP listener
	WSListen   string // host:port of the MQTT-over-websocket listener; "" = off
	WSPath     string // HTTP path the websocket listener upgrades on

	TLS *tls.Config // applied to both listeners when set

	// DataDir holds the broker's store of retained messages and persistent
	// sessions; "" keeps them in memory only.
	DataDir string

	MaxPacketSize    uint32 // bytes, both directions
	MaxMessageExpiry int64  // seconds; caps non-retained messages, never retained state
	MaxInflight      uint16 // QoS>0 messages in flight per client, each direction
	MaxWritesPending int32  // queued outbound packets per client before drops
	MaxClients       int64

	// Per-role limits (docs/security.md). The in-process (inline) client
	// is never limited.
	Device, Skill, Integration, Operator RoleLimits

	// MaxJSONDepth caps the nesting of arrays and objects in JSON payloads
	// (bus, birth, connectivity, skills); default 64.
	MaxJSONDepth int

	// Before authentication: a connection must send a CONNECT of at most
	// MaxConnectSize bytes and be authenticated within ConnectTimeout, and
	// at most MaxPendingConnects connections may be at that stage at once
	// (more are closed as they arrive).
	ConnectTimeout     time.Duration
	MaxConnectSize     int
	MaxPendingConnects int

	// MaxTopicLength caps topic names and subscription filters, bytes.
	MaxTopicLength int

	// A client that does not read: at most MaxWritesPending QoS 1/2
	// packets and MaxQueuedBytes payload bytes wait for it; QoS 0 packets
	// are bounded by MaxQueuedBytes counting 1 KiB a packet besides payload
	// and topic, not by the count (docs/broker.md). Past that its QoS 0
	// messages are dropped and counted, and it is disconnected when a QoS
	// 1 or 2 message does not fit (the message stays in its session) or
	// when it has been losing messages for SlowClientTimeout without a
	// pause of 2 s (a negative timeout: never for QoS 0).
	MaxQueuedBytes    int64
	SlowClientTimeout time.Duration

	// Now is the clock of the rate limiter; nil means time.Now.
	Now func() time.Time

	Logger *slog.Logger

	// RetainedDictionary primes the deflate that holds large retained
	// payloads (over 1 KiB) with sample documents of the shapes that are
	// retained for every device, so each is held in little more than what
	// differs from its sample (docs/broker.md). nil: deflate alone. Only
	// its last 32 KiB count.
	RetainedDictionary []byte
}

func (c *Config) setDefaults() {
	if c.MQTTListen == "" {
		c.MQTTListen = DefaultMQTTListen
	}
	if c.WSPath == "" {
		c.WSPath = DefaultWSPath
	}
	if c.MaxPacketSize == 0 {
		c.MaxPacketSize = DefaultMaxPacketSize
	}
	if c.MaxMessageExpiry == 0 {
		c.MaxMessageExpiry = DefaultMaxExpiry
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.MaxWritesPending == 0 {
		c.MaxWritesPending = DefaultWritesPending
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	c.setLimitDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) setLimitDefaults() {
	busMax := int(c.MaxPacketSize) - min(busHeadroom, int(c.MaxPacketSize)/4)
	c.Device = c.Device.withDefaults(DefaultDeviceLimits, busMax)
	c.Skill = c.Skill.withDefaults(DefaultSkillLimits, busMax)
	c.Integration = c.Integration.withDefaults(DefaultIntegrationLimits, busMax)
	c.Operator = c.Operator.withDefaults(DefaultOperatorLimits, busMax)
	c.MaxJSONDepth = orDefault(c.MaxJSONDepth, DefaultMaxJSONDepth)
	c.ConnectTimeout = orDefault(c.ConnectTimeout, DefaultConnectTimeout)
	c.MaxConnectSize = orDefault(c.MaxConnectSize, DefaultMaxConnectSize)
	c.MaxPendingConnects = orDefault(c.MaxPendingConnects, DefaultMaxPendingConnects)
	c.MaxTopicLength = orDefault(c.MaxTopicLength, DefaultMaxTopicLength)
	c.MaxQueuedBytes = orDefault(c.MaxQueuedBytes, DefaultMaxQueuedBytes)
	c.SlowClientTimeout = orDefault(c.SlowClientTimeout, DefaultSlowClientTimeout)
	if c.Now == nil {
		c.Now = time.Now
	}
}

// withDefaults fills the zero fields of l from def; a bus payload cap
// never exceeds busMax, what the packet size leaves room for.
func (l RoleLimits) withDefaults(def RoleLimits, busMax int) RoleLimits {
	l.Connections = orDefault(l.Connections, def.Connections)
	l.PublishRate = orDefault(l.PublishRate, def.PublishRate)
	l.PublishBurst = orDefault(l.PublishBurst, def.PublishBurst)
	l.MaxBusPayload = orDefault(l.MaxBusPayload, def.MaxBusPayload)
	if l.MaxBusPayload == 0 || l.MaxBusPayload > busMax {
		l.MaxBusPayload = busMax
	}
	l.Subscriptions = orDefault(l.Subscriptions, def.Subscriptions)
	l.MaxSessionExpiry = orDefault(l.MaxSessionExpiry, def.MaxSessionExpiry)
	return l
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// maxSessionExpiry is the largest session expiry any role may have
// (mochi's broker-wide maximum, and MQTT 3.1.1 sessions' expiry).
func (c *Config) maxSessionExpiry() uint32 {
	m := int64(0)
	for _, r := range []Role{RoleDevice, RoleSkill, RoleIntegration, RoleOperator} {
		e := c.limits(r).MaxSessionExpiry
		if e < 0 {
			return math.MaxUint32
		}
		m = max(m, e)
	}
	return uint32(m)
}

// limits returns the limits of role.
func (c *Config) limits(role Role) *RoleLimits {
	switch role {
	case RoleSkill:
		return &c.Skill
	case RoleIntegration:
		return &c.Integration
	case RoleOperator:
		return &c.Operator
	default:
		return &c.Device
	}
}

func (c *Config) validate() error {
	switch {
	case c.MaxPacketSize < minMaxPacketSize || c.MaxPacketSize > maxMQTTPacketSize:
		return fmt.Errorf("max packet size %d: must be between %d and %d", c.MaxPacketSize, minMaxPacketSize, maxMQTTPacketSize)
	case c.MaxMessageExpiry < 0 || c.MaxMessageExpiry > math.MaxUint32:
		return fmt.Errorf("max message expiry %d: must be between 0 and %d seconds", c.MaxMessageExpiry, uint32(math.MaxUint32))
	case c.MaxWritesPending < 0:
		return fmt.Errorf("max writes pending %d: must not be negative", c.MaxWritesPending)
	case c.MaxClients < 0:
		return fmt.Errorf("max clients %d: must not be negative", c.MaxClients)
	case c.MaxConnectSize < 0 || c.MaxPendingConnects < 0 || c.MaxTopicLength < 0 || c.MaxQueuedBytes < 0:
		return fmt.Errorf("max connect size %d, max pending connects %d, max topic length %d, max queued bytes %d: must not be negative",
			c.MaxConnectSize, c.MaxPendingConnects, c.MaxTopicLength, c.MaxQueuedBytes)
	case c.MaxJSONDepth < 0:
		return fmt.Errorf("max JSON depth %d: must not be negative", c.MaxJSONDepth)
	}
	for _, r := range []Role{RoleDevice, RoleSkill, RoleIntegration, RoleOperator} {
		if err := c.limits(r).validate(); err != nil {
			return fmt.Errorf("%s limits: %w", r, err)
		}
	}
	return nil
}

func (l *RoleLimits) validate() error {
	switch {
	case math.IsNaN(l.PublishRate):
		return errors.New("publish rate: not a number")
	case l.PublishBurst < 0 && l.PublishRate >= 0:
		return fmt.Errorf("publish burst %d: must not be negative", l.PublishBurst)
	case l.MaxBusPayload < 0:
		return fmt.Errorf("max bus payload %d: must not be negative", l.MaxBusPayload)
	case l.MaxSessionExpiry > math.MaxUint32:
		return fmt.Errorf("max session expiry %d: at most %d seconds", l.MaxSessionExpiry, uint32(math.MaxUint32))
	}
	return nil
}
