package wsbus

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Defaults for Config. Listen and Route are mycroft.conf's websocket defaults
// (host 127.0.0.1, port 8181, route /core; ovos-behaviour §3.2).
const (
	DefaultListen        = "127.0.0.1:8181"
	DefaultRoute         = "/core"
	DefaultMaxFrame      = 10 * 1000 * 1000 // ovos-messagebus max_msg_size: 10 MB (BUS.md §3)
	DefaultMaxPacket     = 10<<20 + 64<<10  // the broker's default maximum MQTT packet size
	DefaultQueueLen      = 256              // outbound messages queued per client
	DefaultMessageExpiry = 60 * time.Second // a stale command must not fire after a long disconnect (BUS.md §2)
	DefaultWriteTimeout  = 10 * time.Second // one frame to one client

	// PacketHeadroom is the room MaxPacket keeps above MaxFrame for the
	// topic and properties of the PUBLISH that carries a frame.
	PacketHeadroom = 64 << 10
)

const (
	publishTimeout    = 10 * time.Second   // one publish on the Transport
	readHeaderTimeout = 10 * time.Second   // the HTTP upgrade request
	contentType       = "application/json" // BUS.md §2
	publishOverhead   = 64                 // PUBLISH bytes besides topic and payload, rounded up
)

// Config configures a Server. Transport and Device are required; every other
// zero field takes its default. The agent maps mycroft.conf's websocket keys
// (host, port, route, max_msg_size) onto Listen, Route and MaxFrame.
type Config struct {
	Transport bus.Transport // carries the device's MQTT bus
	Device    string        // the device whose bus is served
	Listen    string        // host:port; DefaultListen (loopback)
	Route     string        // HTTP path of the websocket, starting with "/"; DefaultRoute

	// MaxFrame is the largest frame accepted from a client, in bytes. It must
	// not exceed MaxPacket - PacketHeadroom (checked by Start, BUS.md §3).
	// Each frame is also checked against MaxPacket with its own topic, so a
	// frame whose type makes the topic longer than the headroom is dropped,
	// not refused by the broker.
	MaxFrame int
	// MaxPacket is the maximum MQTT packet size of the Transport's broker.
	MaxPacket int

	QueueLen      int           // outbound queue per client; overflow disconnects it
	MessageExpiry time.Duration // MQTT 5 message expiry of published messages, whole seconds
	WriteTimeout  time.Duration // deadline to write one frame to a client
	Logger        *slog.Logger
}

func (c *Config) setDefaults() {
	c.Listen = orDefault(c.Listen, DefaultListen)
	c.Route = orDefault(c.Route, DefaultRoute)
	c.MaxFrame = orDefault(c.MaxFrame, DefaultMaxFrame)
	c.MaxPacket = orDefault(c.MaxPacket, DefaultMaxPacket)
	c.QueueLen = orDefault(c.QueueLen, DefaultQueueLen)
	c.MessageExpiry = orDefault(c.MessageExpiry, DefaultMessageExpiry)
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// validate refuses a config the server could not honour, before anything is
// bound, with an error naming the field.
func (c *Config) validate() error {
	switch {
	case c.Transport == nil:
		return errors.New("no transport")
	case !strings.HasPrefix(c.Route, "/"):
		return fmt.Errorf("route %q: must start with /", c.Route)
	case c.MaxFrame < 0 || c.MaxPacket < 0 || c.QueueLen < 0:
		return fmt.Errorf("max frame %d, max packet %d, queue %d: must not be negative", c.MaxFrame, c.MaxPacket, c.QueueLen)
	case c.MaxFrame > c.MaxPacket-PacketHeadroom:
		return fmt.Errorf("max frame %d bytes: exceeds the MQTT max packet size %d minus %d bytes of headroom for topic and properties (at most %d)",
			c.MaxFrame, c.MaxPacket, PacketHeadroom, c.MaxPacket-PacketHeadroom)
	case c.MessageExpiry < time.Second || c.MessageExpiry > math.MaxUint32*time.Second:
		return fmt.Errorf("message expiry %s: must be between 1s and %d seconds", c.MessageExpiry, uint32(math.MaxUint32))
	case c.WriteTimeout < 0:
		return fmt.Errorf("write timeout %s: must not be negative", c.WriteTimeout)
	}
	if _, err := topic.BusFilter(c.Device); err != nil {
		return err
	}
	return nil
}
