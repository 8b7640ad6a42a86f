package broker

import (
	"bytes"
	"fmt"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/chorus-edge/chorus/gateway/mqttmsg"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Message is one MQTT application message as the gateway's own components see
// it: the one definition in gateway/mqttmsg, which the bus transports share.
type Message = mqttmsg.Message

// UserProperty is an MQTT 5 user property.
type UserProperty = mqttmsg.UserProperty

// UserProperties are a message's user properties, in the order sent.
type UserProperties = mqttmsg.UserProperties

// Publish publishes m from the in-process client. Inline publishes bypass the
// ACL (STYLE.md §8): the caller is the controller and enforces its own policy.
func (b *Broker) Publish(m Message) error {
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: m.QoS, Retain: m.Retain},
		TopicName:   m.Topic,
		Payload:     m.Payload,
		PacketID:    uint16(m.QoS), // mochi validates a non-zero id for QoS>0; the inline client never acks
		Properties: packets.Properties{
			ContentType:           m.ContentType,
			ResponseTopic:         m.ResponseTopic,
			CorrelationData:       m.CorrelationData,
			MessageExpiryInterval: m.MessageExpiry,
		},
	}
	for _, u := range m.User {
		pk.Properties.User = append(pk.Properties.User, packets.UserProperty{Key: u.Key, Val: u.Value})
	}
	if err := b.srv.InjectPacket(b.inline, pk); err != nil {
		return fmt.Errorf("publish %s: %w", m.Topic, err)
	}
	return nil
}

// Subscribe delivers every message matching filter to handler, starting with
// the retained ones. The handler runs synchronously on the publishing client's
// goroutine: it must not block (hand work to a queue). The returned func
// removes the subscription.
func (b *Broker) Subscribe(filter string, handler func(Message)) (unsubscribe func(), err error) {
	id := int(b.subID.Add(1))
	err = b.srv.Subscribe(filter, id, func(_ *mqtt.Client, _ packets.Subscription, pk packets.Packet) {
		handler(fromPacket(pk))
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", filter, err)
	}
	return func() { _ = b.srv.Unsubscribe(filter, id) }, nil
}

func fromPacket(pk packets.Packet) Message {
	m := Message{
		Topic:           pk.TopicName,
		Payload:         bytes.Clone(pk.Payload),
		QoS:             pk.FixedHeader.Qos,
		Retain:          pk.FixedHeader.Retain,
		ContentType:     pk.Properties.ContentType,
		ResponseTopic:   pk.Properties.ResponseTopic,
		CorrelationData: bytes.Clone(pk.Properties.CorrelationData),
		MessageExpiry:   pk.Properties.MessageExpiryInterval,
	}
	if len(pk.Properties.User) > 0 {
		m.User = make(UserProperties, 0, len(pk.Properties.User))
		for _, u := range pk.Properties.User {
			m.User = append(m.User, UserProperty{Key: u.Key, Value: u.Val})
		}
	}
	return m
}
