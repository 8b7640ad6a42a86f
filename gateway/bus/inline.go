package bus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// DefaultInlineQueueSize bounds the inline transport's dispatch queue.
const DefaultInlineQueueSize = 1024

// InProcess is a broker's in-process client: the embedded broker
// (*broker.Broker) provides it. Its handlers run on the publisher's
// goroutine and must not block.
type InProcess interface {
	Publish(Packet) error
	Subscribe(filter string, handler func(Packet)) (unsubscribe func(), err error)
}

// InlineTransport is a Transport over a broker's in-process client.
// The broker runs inline handlers on the publisher's goroutine (a device's
// connection, say), so each delivery is copied and queued, and handlers run
// on the transport's own goroutine in arrival order. Inline publishes bypass
// the broker's ACL (STYLE.md §8): the code using this transport enforces its
// own policy.
type InlineTransport struct {
	b    InProcess
	disp *dispatcher

	// mu guards the fields below.
	mu     sync.Mutex
	subs   map[*inlineSub]struct{}
	closed bool
}

type inlineSub struct {
	h      func(Packet)
	active atomic.Bool
	unsub  func()
}

var _ Transport = (*InlineTransport)(nil)

// Inline returns the in-process transport over b. Close it to remove its
// subscriptions and stop its goroutine; the broker is not closed.
func Inline(b InProcess) *InlineTransport {
	return &InlineTransport{
		b:    b,
		disp: newDispatcher(DefaultInlineQueueSize, slog.New(slog.DiscardHandler)),
		subs: map[*inlineSub]struct{}{},
	}
}

// Publish injects p into the broker as the inline client.
func (t *InlineTransport) Publish(ctx context.Context, p Packet) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s: %w", p.Topic, err)
	}
	if err := topic.ValidName(p.Topic); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if t.isClosed() {
		return fmt.Errorf("publish %s: %w", p.Topic, ErrClosed)
	}
	return t.b.Publish(p)
}

// Subscribe delivers every message matching filter to h, starting with the
// retained ones (flagged Retain).
func (t *InlineTransport) Subscribe(ctx context.Context, filter string, h func(Packet)) (func(), error) {
	if err := topic.ValidFilter(filter); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	s := &inlineSub{h: h}
	s.active.Store(true)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("subscribe %s: %w", filter, ErrClosed)
	}
	t.subs[s] = struct{}{}
	t.mu.Unlock()
	unsub, err := t.b.Subscribe(filter, func(p Packet) { // the broker already copied the payload
		t.disp.offer(func() {
			if s.active.Load() {
				s.h(p)
			}
		}, p.Topic)
	})
	if err != nil {
		t.drop(s)
		return nil, err
	}
	t.mu.Lock()
	s.unsub = unsub
	closed := t.closed
	t.mu.Unlock()
	if closed { // Close ran while we subscribed
		unsub()
		return nil, fmt.Errorf("subscribe %s: %w", filter, ErrClosed)
	}
	return func() { t.remove(s) }, nil
}

func (t *InlineTransport) drop(s *inlineSub) {
	s.active.Store(false)
	t.mu.Lock()
	delete(t.subs, s)
	t.mu.Unlock()
}

func (t *InlineTransport) remove(s *inlineSub) {
	s.active.Store(false)
	t.mu.Lock()
	_, ok := t.subs[s]
	delete(t.subs, s)
	unsub := s.unsub
	t.mu.Unlock()
	if ok && unsub != nil {
		unsub()
	}
}

func (t *InlineTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Dropped reports how many deliveries were dropped because the dispatch
// queue stayed full.
func (t *InlineTransport) Dropped() uint64 { return t.disp.dropped.Load() }

// Close removes every subscription and waits for the dispatch goroutine;
// handlers are not called after it returns. It is idempotent.
func (t *InlineTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	var unsubs []func()
	for s := range t.subs {
		s.active.Store(false)
		if s.unsub != nil {
			unsubs = append(unsubs, s.unsub)
		}
	}
	t.subs = map[*inlineSub]struct{}{}
	t.mu.Unlock()
	for _, unsub := range unsubs {
		unsub()
	}
	t.disp.close()
	return nil
}

// Direct returns b as a Transport with no queue of its own: handlers run on
// the publisher's goroutine, as the broker calls them, so they must only
// queue (the fleet relay does). Inline is the transport for handlers that do
// work.
func Direct(b InProcess) Transport { return direct{b} }

type direct struct{ b InProcess }

func (d direct) Publish(_ context.Context, p Packet) error { return d.b.Publish(p) }

func (d direct) Subscribe(_ context.Context, filter string, h func(Packet)) (func(), error) {
	return d.b.Subscribe(filter, h)
}
