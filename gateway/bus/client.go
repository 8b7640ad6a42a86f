package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Defaults of Config.
const (
	DefaultExpiry    = 5 * time.Minute
	DefaultQueueSize = 256
	ContentType      = "application/json"
)

// Config configures a Client. Transport and Device are required.
type Config struct {
	Transport Transport
	Device    string
	Logger    *slog.Logger
	// Expiry is the MQTT 5 message expiry of what the client publishes, so a
	// stale command does not fire after a long disconnect (BUS.md §2).
	Expiry time.Duration
	// QueueSize bounds each handler's queue; a full queue drops.
	QueueSize int
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Expiry <= 0 {
		c.Expiry = DefaultExpiry
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
}

// Handler handles one delivery. ctx is cancelled when the Client closes.
type Handler func(ctx context.Context, d Delivery)

// Client speaks OVOS Messages on one device's bus (BUS.md §2) over a
// Transport, which it does not own: close the transport after the client.
//
// Each handler runs on its own goroutine fed by a bounded queue, in the order
// the transport delivered: a handler that panics is recovered and logged, and
// a slow one whose queue is full loses messages (logged, counted in Stats)
// without delaying other handlers or the transport. Malformed payloads and
// retained messages are dropped before any handler sees them.
type Client struct {
	tr     Transport
	dev    string
	log    *slog.Logger
	expiry uint32
	qsize  int

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stats  stats

	// mu guards the fields below.
	mu     sync.Mutex
	subs   map[*subscription]struct{}
	closed bool
}

// New returns a client for cfg.Device's bus.
func New(cfg Config) (*Client, error) {
	if cfg.Transport == nil {
		return nil, errors.New("bus client: no transport")
	}
	if err := topic.ValidDeviceID(cfg.Device); err != nil {
		return nil, fmt.Errorf("bus client: %w", err)
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		tr: cfg.Transport, dev: cfg.Device, log: cfg.Logger.With("device", cfg.Device),
		expiry: expirySeconds(cfg.Expiry), qsize: cfg.QueueSize,
		ctx: ctx, cancel: cancel, subs: map[*subscription]struct{}{},
	}, nil
}

func expirySeconds(d time.Duration) uint32 {
	s := math.Ceil(d.Seconds())
	if s > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(s)
}

// Device returns the device whose bus the client speaks on.
func (c *Client) Device() string { return c.dev }

// Emit publishes m on the device's bus: topic chorus/v1/<device>/bus/<type>,
// QoS 1, never retained, content type application/json, with the client's
// message expiry (BUS.md §2). m is encoded canonically (envelope.Encode),
// which refuses a type that cannot be one topic level.
func (c *Client) Emit(ctx context.Context, m envelope.Message) error {
	return c.emit(ctx, m, nil, "")
}

func (c *Client) emit(ctx context.Context, m envelope.Message, corr []byte, respTopic string) error {
	if c.isClosed() {
		return fmt.Errorf("emit %q: %w", m.Type, ErrClosed)
	}
	name, err := topic.Bus(c.dev, m.Type)
	if err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	payload, err := envelope.Encode(m)
	if err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	return c.tr.Publish(ctx, Packet{
		Topic: name, Payload: payload, QoS: 1, ContentType: ContentType,
		MessageExpiry: c.expiry, CorrelationData: corr, ResponseTopic: respTopic,
	})
}

// Reply publishes m as the answer to the delivery to, echoing its MQTT 5
// correlation data so the asker can tell its reply from another's (BUS.md §2).
// Derive m with to.Message.Response or Reply to get MSG-1's routing.
func (c *Client) Reply(ctx context.Context, to Delivery, m envelope.Message) error {
	return c.emit(ctx, m, to.CorrelationData, "")
}

// On calls h for each message of type msgType on the device's bus. off
// removes h and stops its goroutine; it is idempotent.
func (c *Client) On(msgType string, h Handler) (off func(), err error) {
	filter, err := topic.Bus(c.dev, msgType)
	if err != nil {
		return nil, fmt.Errorf("on: %w", err)
	}
	return c.subscribe(filter, h)
}

// OnAny calls h for every message on the device's bus.
func (c *Client) OnAny(h Handler) (off func(), err error) {
	filter, err := topic.BusFilter(c.dev)
	if err != nil {
		return nil, fmt.Errorf("on any: %w", err)
	}
	return c.subscribe(filter, h)
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close removes every handler, cancels the context handlers were given and
// waits for their goroutines to return (a running handler must honour its
// ctx). It does not close the transport. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	subs := make([]*subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	c.cancel()
	for _, s := range subs {
		s.off()
	}
	c.wg.Wait()
	return nil
}

// Stats counts what the client's handlers did not get.
type Stats struct {
	Dropped   uint64 // a handler's queue was full
	Malformed uint64 // payload not a Message, or its type not the topic's
	Panics    uint64 // a handler panicked
}

type stats struct{ dropped, malformed, panics atomic.Uint64 }

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Dropped: c.stats.dropped.Load(), Malformed: c.stats.malformed.Load(), Panics: c.stats.panics.Load()}
}
