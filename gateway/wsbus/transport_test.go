package wsbus

import (
	"context"
	"sync"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// inlineTransport is a test-only bus.Transport over the embedded broker's
// inline client. The broker runs inline handlers on the publisher's
// goroutine, so each subscription hands packets to its own goroutine through
// a channel, in order.
type inlineTransport struct{ b *broker.Broker }

func (it inlineTransport) Publish(_ context.Context, p bus.Packet) error {
	return it.b.Publish(broker.Message{
		Topic: p.Topic, Payload: p.Payload, QoS: p.QoS, Retain: p.Retain,
		ContentType: p.ContentType, MessageExpiry: p.MessageExpiry,
	})
}

func (it inlineTransport) Subscribe(_ context.Context, filter string, h func(bus.Packet)) (func(), error) {
	ch := make(chan bus.Packet, 4096)
	done := make(chan struct{})
	unsub, err := it.b.Subscribe(filter, func(m broker.Message) {
		select {
		case ch <- bus.Packet{Topic: m.Topic, Payload: m.Payload, QoS: m.QoS, Retain: m.Retain, ContentType: m.ContentType, MessageExpiry: m.MessageExpiry}:
		case <-done:
		}
	})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case p := <-ch:
				h(p)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			unsub()
			close(done)
			wg.Wait()
		})
	}, nil
}

var _ bus.Transport = inlineTransport{}

// failingTransport refuses to subscribe, to test Start's cleanup.
type failingTransport struct{ err error }

func (f failingTransport) Publish(context.Context, bus.Packet) error { return f.err }
func (f failingTransport) Subscribe(context.Context, string, func(bus.Packet)) (func(), error) {
	return nil, f.err
}
