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

// Defaults of the publish limits (limits.go, ratelimit.go; docs/security.md).
const (
	// Publish rate limits per connection (token buckets).
	// A device's agent carries all of its local OVOS services' bus traffic;
	// integrations and operators are fleet-owner credentials that may address
	// many devices at once. Skills are third-party code and get less.
	DefaultPublishRate       = 200 // messages/s: device, integration, operator
	DefaultPublishBurst      = 400
	DefaultSkillPublishRate  = 50 // messages/s: skill
	DefaultSkillPublishBurst = 100
	// Bus payload caps (limits.go). The device cap leaves the packet size's
	// headroom for topic and properties, so an OVOS websocket frame of 10 MiB
	// relayed by the agent still fits; a skill's messages are text and small
	// structured data, so 1 MiB is generous.
	busHeadroom               = 64 << 10
	DefaultMaxSkillBusPayload = 1 << 20
	// The envelope's own limit, so the broker never refuses a message every
	// bus client would accept; it protects subscribers that decode JSON
	// without the envelope (Home Assistant, scripts).
	DefaultMaxJSONDepth = envelope.MaxDepth
)

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

	// Publish rate limits per connection, by role: a token bucket refilled
	// at Rate messages per second holding at most Burst. 0 takes the
	// default; a negative rate turns the limit off for that role. The
	// in-process (inline) client is never limited.
	PublishRate       float64 // devices, integrations, operators (200/s)
	PublishBurst      int     // (400)
	SkillPublishRate  float64 // skills (50/s)
	SkillPublishBurst int     // (100)

	// Payload caps of bus messages (chorus/v1/<device>/bus/<type>), bytes.
	// MaxBusPayload applies to devices, integrations and operators (default
	// MaxPacketSize less 64 KiB: 10 MiB at the default packet size),
	// MaxSkillBusPayload to skills (1 MiB). The state and command topics have
	// fixed caps (limits.go).
	MaxBusPayload      int
	MaxSkillBusPayload int
	// MaxJSONDepth caps the nesting of arrays and objects in JSON payloads
	// (bus, birth, connectivity, skills); default 64.
	MaxJSONDepth int

	// Now is the clock of the rate limiter; nil means time.Now.
	Now func() time.Time

	Logger *slog.Logger
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
	if c.PublishRate == 0 {
		c.PublishRate = DefaultPublishRate
	}
	if c.PublishBurst == 0 {
		c.PublishBurst = DefaultPublishBurst
	}
	if c.SkillPublishRate == 0 {
		c.SkillPublishRate = DefaultSkillPublishRate
	}
	if c.SkillPublishBurst == 0 {
		c.SkillPublishBurst = DefaultSkillPublishBurst
	}
	if c.MaxBusPayload == 0 {
		c.MaxBusPayload = int(c.MaxPacketSize) - min(busHeadroom, int(c.MaxPacketSize)/4)
	}
	if c.MaxSkillBusPayload == 0 {
		c.MaxSkillBusPayload = min(DefaultMaxSkillBusPayload, c.MaxBusPayload)
	}
	if c.MaxJSONDepth == 0 {
		c.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if c.Now == nil {
		c.Now = time.Now
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
	case c.PublishBurst < 0 || c.SkillPublishBurst < 0:
		return fmt.Errorf("publish burst %d, skill publish burst %d: must not be negative", c.PublishBurst, c.SkillPublishBurst)
	case math.IsNaN(c.PublishRate) || math.IsNaN(c.SkillPublishRate):
		return errors.New("publish rate: not a number")
	case c.MaxBusPayload < 0 || c.MaxSkillBusPayload < 0:
		return fmt.Errorf("max bus payload %d, max skill bus payload %d: must not be negative", c.MaxBusPayload, c.MaxSkillBusPayload)
	case c.MaxJSONDepth < 0:
		return fmt.Errorf("max JSON depth %d: must not be negative", c.MaxJSONDepth)
	}
	return nil
}
