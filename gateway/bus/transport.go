// Package bus is the OVOS message bus over MQTT 5 (BUS.md §2): a Transport
// that moves MQTT application messages (over a network connection with
// autopaho, or in-process over the embedded broker's inline client), and a
// Client that speaks OVOS Messages on one device's bus on top of it.
package bus

import (
	"context"

	"github.com/chorus-edge/chorus/gateway/mqttmsg"
)

// Packet is one MQTT application message with the MQTT 5 properties the bus
// uses: the one definition in gateway/mqttmsg, which is also the broker's
// in-process Message.
type Packet = mqttmsg.Message

// Transport publishes and subscribes MQTT application messages.
// Implementations re-establish subscriptions after a reconnect. Handlers may be
// called from the transport's delivery goroutine and must not block.
type Transport interface {
	Publish(ctx context.Context, p Packet) error
	Subscribe(ctx context.Context, filter string, h func(Packet)) (unsubscribe func(), err error)
}
