package wsbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Defaults for Config. Listen and Route are mycroft.conf's websocket defaults
// (host 127.0.0.1, port 8181, route /core; ovos-behaviour §3.2).
const (
	DefaultListen        = "127.0.0.1:8181"
	DefaultRoute         = "/core"
	DefaultMaxFrame      = 10 * 1000 * 1000 // ovos-messagebus max_msg_size: 10 MB (BUS.md §3)
	MaxMaxFrame          = 25 * 1000 * 1000 // ovos-config's shipped max_msg_size: 25 MB, the most a stock client sends
	DefaultSkillMaxFrame = 1 << 20          // the broker's bus payload cap for a skill (broker.Config.MaxSkillBusPayload)
	DefaultMaxPacket     = 10<<20 + 64<<10  // the broker's default maximum MQTT packet size
	DefaultQueueLen      = 256              // outbound messages queued per client
	DefaultMaxClients    = 128              // connections at once
	DefaultMessageExpiry = 60 * time.Second // a stale command must not fire after a long disconnect (BUS.md §2)
	DefaultWriteTimeout  = 10 * time.Second // one frame to one client

	// MinFrameBudget is the least FrameBudget defaults to: a few big frames
	// in flight at once.
	MinFrameBudget = 32 << 20
	// SmallFrame is what a connection reads of a frame without taking from
	// the frame budget; OVOS messages are almost all far smaller.
	SmallFrame = 64 << 10

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
	Transport bus.Transport // carries the device's MQTT bus, with the device's authority
	Device    string        // the device whose bus is served
	Listen    string        // host:port; DefaultListen (loopback)
	Route     string        // base HTTP path, starting with "/"; DefaultRoute

	// Secret keys the routes that authenticate a connection (auth.go).
	// nil: a random one, so the routes change at every Start.
	Secret []byte
	// ServicesUIDs are the uids the device's OVOS services run as: a
	// connection on the services route must come from a loopback socket
	// owned by one of them, root or the server's own uid.
	ServicesUIDs []uint32
	// DialSkill opens the MQTT connection a skill's websocket client is
	// relayed over, with that skill's own credentials, so the broker's skill
	// policy applies to it exactly as on MQTT. nil refuses skill routes.
	DialSkill func(ctx context.Context, skill string) (SkillTransport, error)
	// OnServicesFrame is called with every valid message a services
	// connection sent, on its reader goroutine; it must not block. The agent
	// takes state only from there (docs/security.md).
	OnServicesFrame func(envelope.Message)
	// OnSkillFrame is called with every message a skill connection sent
	// that the broker accepted, with the skill's id, on its reader
	// goroutine; it must not block. Unlike on the bus, the sender is known
	// here: the agent learns an OVOS launcher's load from it.
	OnSkillFrame func(skill string, m envelope.Message)
	// HideFromSkills are message types never delivered to a skill
	// connection (the agent's management types, which it alone handles
	// for the OVOS launchers: docs/ovos.md).
	HideFromSkills []string

	// MaxFrame is the largest frame accepted from a services client, in
	// bytes, at most MaxMaxFrame (websocket.max_msg_size). A frame is also
	// checked against MaxPacket with its own topic: one the broker could not
	// carry is refused here, with the reason, rather than by the broker.
	MaxFrame int
	// SkillMaxFrame is the largest frame from a skill client.
	SkillMaxFrame int
	// MaxPacket is the maximum MQTT packet size of the Transport's broker.
	MaxPacket int
	// FrameBudget bounds the bytes of frames over SmallFrame that all
	// connections hold at once; default max(MaxFrame, MinFrameBudget). A
	// connection whose frame grows past SmallFrame waits for its frame's
	// limit to fit in the budget, so a flood of big frames costs the budget,
	// not MaxFrame per client.
	FrameBudget int
	MaxClients  int // connections at once; default DefaultMaxClients

	QueueLen      int           // outbound queue per client; overflow disconnects it
	MessageExpiry time.Duration // MQTT 5 message expiry of published messages, whole seconds
	WriteTimeout  time.Duration // deadline to write one frame to a client
	Logger        *slog.Logger

	peerUID func(local, remote string) (uint32, error) // tests replace the /proc lookup
}

// SkillTransport is a skill's own MQTT connection (*bus.MQTT satisfies it).
type SkillTransport interface {
	bus.Transport
	Close() error
}

func (c *Config) setDefaults() {
	c.Listen = orDefault(c.Listen, DefaultListen)
	c.Route = orDefault(c.Route, DefaultRoute)
	c.MaxFrame = orDefault(c.MaxFrame, DefaultMaxFrame)
	c.SkillMaxFrame = orDefault(c.SkillMaxFrame, DefaultSkillMaxFrame)
	c.MaxPacket = orDefault(c.MaxPacket, DefaultMaxPacket)
	c.FrameBudget = orDefault(c.FrameBudget, max(c.MaxFrame, c.SkillMaxFrame, MinFrameBudget))
	c.MaxClients = orDefault(c.MaxClients, DefaultMaxClients)
	c.QueueLen = orDefault(c.QueueLen, DefaultQueueLen)
	c.MessageExpiry = orDefault(c.MessageExpiry, DefaultMessageExpiry)
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.peerUID == nil {
		c.peerUID = loopbackPeerUID
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
	case c.MaxFrame < 0 || c.SkillMaxFrame < 0 || c.MaxPacket < 0 || c.QueueLen < 0 || c.FrameBudget < 0 || c.MaxClients < 0:
		return fmt.Errorf("max frame %d, skill max frame %d, max packet %d, queue %d, frame budget %d, max clients %d: must not be negative",
			c.MaxFrame, c.SkillMaxFrame, c.MaxPacket, c.QueueLen, c.FrameBudget, c.MaxClients)
	case c.MaxFrame > MaxMaxFrame:
		return fmt.Errorf("max frame %d bytes: over %d, the most OVOS sends (websocket.max_msg_size 25)", c.MaxFrame, MaxMaxFrame)
	case c.FrameBudget < max(c.MaxFrame, c.SkillMaxFrame):
		return fmt.Errorf("frame budget %d bytes: below the largest frame accepted (%d)", c.FrameBudget, max(c.MaxFrame, c.SkillMaxFrame))
	case c.Secret != nil && len(c.Secret) < 16:
		return fmt.Errorf("secret of %d bytes: want at least 16", len(c.Secret))
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
