package broker

import (
	"encoding/json"
	"fmt"
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/packets"
)

// expiresWithConnection reports whether cl's session ends when its network
// connection does: MQTT 5 session expiry 0 [MQTT-3.1.2-11], or an MQTT 3
// clean session. mochi uses the same test when a client disconnects.
func expiresWithConnection(cl *mqtt.Client) bool {
	if cl.Properties.ProtocolVersion == 5 {
		return cl.Properties.Props.SessionExpiryInterval == 0
	}
	return cl.Properties.Clean
}

// OnSessionEstablish decides, before mochi adds the client and re-sends an
// inherited session's in-flight messages (each an OnQosPublish), whether
// its session is stored: a clean session is marked as storing nothing for
// as long as the client object lives.
func (s *store) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	if expiresWithConnection(cl) {
		s.stopSession(cl, sessionClean)
	}
}

// OnSessionEstablished stores a persistent session's client record. A clean
// session is not stored, and a record left by an earlier persistent session
// of the same client id is deleted: that session ended now [MQTT-3.1.2-4].
// Nothing changes the session expiry between OnSessionEstablish and here
// (both run on the client's goroutine before it reads a packet).
func (s *store) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if expiresWithConnection(cl) {
		s.conn.store(cl, sessionClean)
		s.forgetClient(cl.ID)
		return
	}
	s.conn.store(cl, sessionStored)
	s.saveClient(cl)
}

// OnWillSent stores the client record without its will; mochi may send a
// delayed will after the session ended, which putFor skips.
func (s *store) OnWillSent(cl *mqtt.Client, _ packets.Packet) { s.saveClient(cl) }

func (s *store) saveClient(cl *mqtt.Client) {
	props := cl.Properties.Props.Copy(false)
	s.putFor(cl, storeKey{kind: kindClient, client: cl.ID}, change{value: &storage.Client{
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
	}})
}

// OnDisconnect forgets a persistent session that expires with this
// connection (its expiry set to 0 at DISCONNECT); an unexpired one stays
// stored until OnClientExpired. A clean session was never stored. A session
// that ends, and the client object of one taken over, store nothing from
// now on: mochi clears them only after this hook, and may deliver to them
// meanwhile and after (store_session.go).
func (s *store) OnDisconnect(cl *mqtt.Client, _ error, expire bool) {
	if kind, _ := s.connKind(cl); kind == sessionClean {
		_, _ = s.conn.remove(cl) // stopped keeps it marked clean
		return
	}
	takenOver := cl.StopCause() == packets.ErrSessionTakenOver
	if !expire && !takenOver {
		_, _ = s.conn.remove(cl) // offline; its session stays stored
		return
	}
	s.stopSession(cl, sessionEnded)
	if !takenOver { // the new connection owns the record of a taken-over one
		s.forgetClient(cl.ID)
	}
}

// OnClientExpired forgets an offline session whose expiry passed: its client
// record, subscriptions and in-flight messages. mochi removes the client
// without clearing it (no unsubscribe or inflight hooks follow), so this hook
// deletes the rows itself, and nothing more of the session is stored.
func (s *store) OnClientExpired(cl *mqtt.Client) {
	s.stopSession(cl, sessionEnded)
	for f := range cl.State.Subscriptions.GetAll() {
		s.del(storeKey{kind: kindSubscription, client: cl.ID, name: f})
	}
	for _, pk := range cl.State.Inflight.GetAll(false) {
		s.del(storeKey{kind: kindInflight, client: cl.ID, id: pk.PacketID})
	}
	s.forgetClient(cl.ID)
}

func (s *store) OnSubscribed(cl *mqtt.Client, pk packets.Packet, codes []byte) {
	for i, f := range pk.Filters {
		if i < len(codes) && codes[i] >= 0x80 {
			continue // refused subscriptions are not part of the session
		}
		k := storeKey{kind: kindSubscription, client: cl.ID, name: f.Filter}
		s.putFor(cl, k, change{value: &storage.Subscription{
			ID: k.key(), T: storage.SubscriptionKey, Client: cl.ID, Qos: f.Qos, Filter: f.Filter,
			Identifier: f.Identifier, NoLocal: f.NoLocal, RetainHandling: f.RetainHandling,
			RetainAsPublished: f.RetainAsPublished,
		}})
	}
}

func (s *store) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	for _, f := range pk.Filters {
		s.delFor(cl, storeKey{kind: kindSubscription, client: cl.ID, name: f.Filter})
	}
}

func (s *store) OnRetainMessage(cl *mqtt.Client, pk packets.Packet, r int64) {
	k := storeKey{kind: kindRetained, name: pk.TopicName}
	if r == -1 {
		s.del(k)
		return
	}
	s.put(k, change{value: message(k, cl.ID, pk, 0)})
}

func (s *store) OnRetainedExpired(topic string) { s.del(storeKey{kind: kindRetained, name: topic}) }

// OnQosPublish records an in-flight message of a persistent session, so it is
// re-sent after a restart [MQTT-4.4.0-1]. Two kinds are skipped: those of a
// clean session, which a restart ends anyway, and mochi's own PUBACK for an
// inbound QoS 1 publish (ownAck).
func (s *store) OnQosPublish(cl *mqtt.Client, pk packets.Packet, sent int64, _ int) {
	if ownAck(pk) || s.connClean(cl) {
		return // connClean first spares building the change
	}
	k := storeKey{kind: kindInflight, client: cl.ID, id: pk.PacketID}
	s.putFor(cl, k, change{value: message(k, cl.ID, pk, sent)})
}

func (s *store) OnQosComplete(cl *mqtt.Client, pk packets.Packet) { s.forgetInflight(cl, pk) }
func (s *store) OnQosDropped(cl *mqtt.Client, pk packets.Packet)  { s.forgetInflight(cl, pk) }

func (s *store) forgetInflight(cl *mqtt.Client, pk packets.Packet) {
	if ownAck(pk) || s.connClean(cl) {
		return
	}
	s.delFor(cl, storeKey{kind: kindInflight, client: cl.ID, id: pk.PacketID})
}

// ownAck reports whether pk is mochi's PUBACK for an inbound QoS 1 publish:
// mochi sets it in flight and completes it before reading the next packet,
// so there is nothing to re-send after a restart. The server builds it and
// stamps Created; a subscriber's PUBACK completing an outbound message comes
// off the wire without it. Storing it would also overwrite (and its
// completion delete) an outbound message of the same client with the same
// packet id, since both share the row key.
func ownAck(pk packets.Packet) bool { return pk.FixedHeader.Type == packets.Puback && pk.Created != 0 }

// message is the stored form of a retained or in-flight packet, without its
// ID (the row key): the writer sets it (store.value), so the key string is
// not built on the packet path.
func message(k storeKey, client string, pk packets.Packet, sent int64) *storage.Message {
	props := pk.Properties
	return &storage.Message{
		T: k.kindName(), Client: client, Origin: pk.Origin, FixedHeader: pk.FixedHeader,
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

// StoredClients also learns which client ids have a stored record, so
// forgetClient deletes only those (an unreadable row included).
func (s *store) StoredClients() ([]storage.Client, error) {
	return load[storage.Client](s, storage.ClientKey, func(key string) {
		s.mu.Lock()
		s.clients[strings.TrimPrefix(key, storage.ClientKey+"_")] = struct{}{}
		s.mu.Unlock()
	})
}

func (s *store) StoredSubscriptions() ([]storage.Subscription, error) {
	return load[storage.Subscription](s, storage.SubscriptionKey, nil)
}

func (s *store) StoredInflightMessages() ([]storage.Message, error) {
	return load[storage.Message](s, storage.InflightKey, nil)
}

func (s *store) StoredRetainedMessages() ([]storage.Message, error) {
	return load[storage.Message](s, storage.RetainedKey, nil)
}

// load reads every stored value of kind, telling seen (if not nil) each row
// key; it runs once, at Serve, before any client.
func load[T any](s *store, kind string, seen func(key string)) ([]T, error) {
	rows, err := s.db.Query(`SELECT key, value, payload FROM mqtt_state WHERE kind = ? ORDER BY seq, key`, kind)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kind, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var key string
		var b, payload []byte
		if err := rows.Scan(&key, &b, &payload); err != nil {
			return nil, fmt.Errorf("load %s: %w", kind, err)
		}
		if seen != nil {
			seen(key)
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			s.log.Warn("broker store: skipping unreadable row", "key", key, "error", err)
			continue
		}
		if m, ok := any(&v).(*storage.Message); ok && payload != nil {
			m.Payload = payload // else a row of an older binary: the payload was in its JSON (storeSchema)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
