package broker

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
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
	}
	return nil
}
