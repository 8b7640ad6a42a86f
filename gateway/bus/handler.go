package bus

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// subscription is one handler: a transport subscription feeding a bounded
// queue drained by the handler's own goroutine.
type subscription struct {
	c      *Client
	filter string
	h      Handler
	q      *fifo
	stop   chan struct{}

	once  sync.Once
	unsub func() // set under c.mu once the transport subscription exists
}

func (c *Client) subscribe(filter string, h Handler) (func(), error) {
	if h == nil {
		return nil, fmt.Errorf("subscribe %s: nil handler", filter)
	}
	s := &subscription{c: c, filter: filter, h: h, q: newFIFO(c.qsize), stop: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("subscribe %s: %w", filter, ErrClosed)
	}
	c.subs[s] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go s.run()

	ctx, cancel := context.WithTimeout(c.ctx, subscribeTimeout)
	defer cancel()
	unsub, err := c.tr.Subscribe(ctx, filter, s.offer)
	if err != nil {
		s.off()
		return nil, err
	}
	c.mu.Lock()
	s.unsub = unsub
	_, live := c.subs[s]
	c.mu.Unlock()
	if !live { // off or Close ran while the transport subscribed
		unsub()
		return nil, fmt.Errorf("subscribe %s: %w", filter, ErrClosed)
	}
	return s.off, nil
}

// offer is the transport handler: it never blocks.
func (s *subscription) offer(p Packet) {
	select {
	case <-s.stop:
		return
	default:
	}
	if !s.q.push(p) {
		n := s.c.stats.dropped.Add(1)
		if logDrop(n) {
			s.c.log.Warn("bus handler queue full, message dropped", "filter", s.filter, "topic", p.Topic, "dropped_total", n)
		}
	}
}

func (s *subscription) run() {
	defer s.c.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.q.ready:
		}
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			p, ok := s.q.pop()
			if !ok {
				break
			}
			s.handle(p)
		}
	}
}

func (s *subscription) handle(p Packet) {
	d, err := ParseDelivery(p)
	switch {
	case errors.Is(err, ErrRetained):
		s.c.log.Debug("bus: retained message ignored", "topic", p.Topic)
		return
	case err != nil:
		s.c.stats.malformed.Add(1)
		s.c.log.Warn("bus: malformed message dropped", "topic", p.Topic, "err", err)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.c.stats.panics.Add(1)
			s.c.log.Error("bus handler panicked", "filter", s.filter, "type", d.Message.Type,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	s.h(s.c.ctx, d)
}

// off removes the transport subscription and stops the goroutine. Queued
// messages are discarded. It is idempotent and may be called from the
// handler itself.
func (s *subscription) off() {
	s.once.Do(func() {
		s.c.mu.Lock()
		delete(s.c.subs, s)
		unsub := s.unsub
		s.c.mu.Unlock()
		if unsub != nil {
			unsub()
		}
		close(s.stop)
	})
}
