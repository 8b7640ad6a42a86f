// Package external runs the fleet controller against an external MQTT 5
// broker (EMQX, Mosquitto, HiveMQ…) instead of the embedded one
// (ARCHITECTURE.md §1, §7): Adapter is the controller's Broker over a
// network MQTT connection, and Authenticate / Authorize take the decisions
// an external broker's HTTP auth backend asks for (the shape EMQX calls),
// from the same in-memory auth table the embedded broker uses.
package external

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// PublishTimeout bounds one publish, acknowledgement included.
const PublishTimeout = 10 * time.Second

// Adapter is the controller's Broker (fleet/controller.Broker) over a bus
// Transport connected to an external broker. The external broker enforces
// its own ACL, so the controller's account there must be allowed to publish
// and subscribe everywhere (docs/security.md). SetTable only records the
// table: the external broker's auth is configured from exports of it, or
// asks Authenticate and Authorize over HTTP.
type Adapter struct {
	t     bus.Transport
	table atomic.Pointer[broker.Table]
}

// New returns an adapter over t (typically a *bus.MQTT from bus.DialMQTT).
func New(t bus.Transport) *Adapter { return &Adapter{t: t} }

// Publish sends m and waits for the broker's acknowledgement at QoS > 0.
func (a *Adapter) Publish(m broker.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), PublishTimeout)
	defer cancel()
	return a.t.Publish(ctx, m)
}

// Subscribe subscribes filter; handler gets every matching delivery.
func (a *Adapter) Subscribe(filter string, handler func(broker.Message)) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), PublishTimeout)
	defer cancel()
	return a.t.Subscribe(ctx, filter, handler)
}

// SetTable records t for exports and the HTTP auth decisions.
func (a *Adapter) SetTable(t *broker.Table) { a.table.Store(t) }

// Table returns the last table the controller set, or nil.
func (a *Adapter) Table() *broker.Table { return a.table.Load() }
