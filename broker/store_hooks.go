package broker

import (
	"encoding/json"
	"fmt"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Keys follow mochi's storage package so the layout reads like its other hooks.
func clientKey(id string) string          { return storage.ClientKey + "_" + id }
func subscriptionKey(id, f string) string { return storage.SubscriptionKey + "_" + id + ":" + f }
func retainedKey(topic string) string     { return storage.RetainedKey + "_" + topic }
func inflightKey(id string, pk packets.Packet) string {
	return storage.InflightKey + "_" + id + ":" + pk.FormatID()
}

func (s *store) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) { s.saveClient(cl) }
func (s *store) OnWillSent(cl *mqtt.Client, _ packets.Packet)           { s.saveClient(cl) }

func (s *store) saveClient(cl *mqtt.Client) {
	props := cl.Properties.Props.Copy(false)
	s.set(clientKey(cl.ID), storage.ClientKey, &storage.Client{
		ID:              cl.ID,
		T:               storage.ClientKey,
		Remote:          cl.Net.Remote,
		Listener:        cl.Net.Listener,
		Username:        cl.Properties.Username,
		Clean:           cl.Properties.Clean,
		ProtocolVersion: cl.Properties.ProtocolVersion,
		Properties: storage.ClientProperties{
			SessionExpiryInterval: props.SessionExpiryInterval,
			AuthenticationMethod:  props.AuthenticationMethod,
			AuthenticationData:    props.AuthenticationData,
			RequestProblemInfo:    props.RequestProblemInfo,
			RequestResponseInfo:   props.RequestResponseInfo,
			ReceiveMaximum:        props.ReceiveMaximum,
			TopicAliasMaximum:     props.TopicAliasMaximum,
			User:                  props.User,
			MaximumPacketSize:     props.MaximumPacketSize,
		},
		Will: storage.ClientWill(cl.Properties.Will),
	})
}

// OnDisconnect forgets a session that expires with its connection; a
// persistent session stays stored until OnClientExpired.
func (s *store) OnDisconnect(cl *mqtt.Client, _ error, expire bool) {
	if !expire || cl.StopCause() == packets.ErrSessionTakenOver {
		return
	}
	s.del(clientKey(cl.ID))
}

func (s *store) OnClientExpired(cl *mqtt.Client) { s.del(clientKey(cl.ID)) }

func (s *store) OnSubscribed(cl *mqtt.Client, pk packets.Packet, codes []byte) {
	for i, f := range pk.Filters {
		if i < len(codes) && codes[i] >= 0x80 {
			continue // refused subscriptions are not part of the session
		}
		key := subscriptionKey(cl.ID, f.Filter)
		s.set(key, storage.SubscriptionKey, &storage.Subscription{
			ID: key, T: storage.SubscriptionKey, Client: cl.ID, Qos: f.Qos, Filter: f.Filter,
			Identifier: f.Identifier, NoLocal: f.NoLocal, RetainHandling: f.RetainHandling,
			RetainAsPublished: f.RetainAsPublished,
		})
	}
}

func (s *store) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	for _, f := range pk.Filters {
		s.del(subscriptionKey(cl.ID, f.Filter))
	}
}

func (s *store) OnRetainMessage(cl *mqtt.Client, pk packets.Packet, r int64) {
	if r == -1 {
		s.del(retainedKey(pk.TopicName))
		return
	}
	s.set(retainedKey(pk.TopicName), storage.RetainedKey, message(retainedKey(pk.TopicName), storage.RetainedKey, cl.ID, pk, 0))
}

func (s *store) OnRetainedExpired(topic string) { s.del(retainedKey(topic)) }

func (s *store) OnQosPublish(cl *mqtt.Client, pk packets.Packet, sent int64, _ int) {
	key := inflightKey(cl.ID, pk)
	s.set(key, storage.InflightKey, message(key, storage.InflightKey, cl.ID, pk, sent))
}

func (s *store) OnQosComplete(cl *mqtt.Client, pk packets.Packet) { s.del(inflightKey(cl.ID, pk)) }
func (s *store) OnQosDropped(cl *mqtt.Client, pk packets.Packet)  { s.del(inflightKey(cl.ID, pk)) }

func message(key, kind, client string, pk packets.Packet, sent int64) *storage.Message {
	props := pk.Properties.Copy(false)
	return &storage.Message{
		ID: key, T: kind, Client: client, Origin: pk.Origin, FixedHeader: pk.FixedHeader,
		TopicName: pk.TopicName, Payload: pk.Payload, Sent: sent, Created: pk.Created,
		// Without the id an in-flight message comes back as id 0 after a
		// restart, and re-sending it drops the client's connection every
		// time it reconnects (mochi's bolt hook has the same omission).
		PacketID: pk.PacketID,
		Properties: storage.MessageProperties{
			PayloadFormat:          props.PayloadFormat,
			PayloadFormatFlag:      props.PayloadFormatFlag,
			MessageExpiryInterval:  props.MessageExpiryInterval,
			ContentType:            props.ContentType,
			ResponseTopic:          props.ResponseTopic,
			CorrelationData:        props.CorrelationData,
			SubscriptionIdentifier: props.SubscriptionIdentifier,
			TopicAlias:             props.TopicAlias,
			User:                   props.User,
		},
	}
}

func (s *store) StoredClients() ([]storage.Client, error) {
	return load[storage.Client](s, storage.ClientKey)
}

func (s *store) StoredSubscriptions() ([]storage.Subscription, error) {
	return load[storage.Subscription](s, storage.SubscriptionKey)
}

func (s *store) StoredInflightMessages() ([]storage.Message, error) {
	return load[storage.Message](s, storage.InflightKey)
}

func (s *store) StoredRetainedMessages() ([]storage.Message, error) {
	return load[storage.Message](s, storage.RetainedKey)
}

// load reads every stored value of kind; it runs once, at Serve, before any client.
func load[T any](s *store, kind string) ([]T, error) {
	rows, err := s.db.Query(`SELECT key, value FROM mqtt_state WHERE kind = ? ORDER BY key`, kind)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kind, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var key string
		var b []byte
		if err := rows.Scan(&key, &b); err != nil {
			return nil, fmt.Errorf("load %s: %w", kind, err)
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			s.log.Warn("broker store: skipping unreadable row", "key", key, "error", err)
			continue
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
