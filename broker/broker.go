// Package broker embeds the MQTT 5 broker (mochi-mqtt) that replaces the OVOS
// websocket bus. It owns the listeners, the auth and ACL policy (an in-memory
// table swapped atomically, never a database call per packet), the limits, and
// the persistence of retained messages and sessions.
package broker

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Broker is a running embedded broker. Close stops it and waits for every
// goroutine it started.
type Broker struct {
	cfg    Config
	srv    *mqtt.Server
	inline *mqtt.Client // the gateway's own client; not in mochi's client table
	policy *policy
	gate   *gate // connections not yet authenticated (preauth.go)
	tcp    *tcpListener
	ws     *wsListener
	store  *store // nil without a DataDir
	expiry *retainedExpiry
	swept  bool // expiry's sweeper runs (mochi's is stopped)

	subID     atomic.Int64
	closeOnce sync.Once
}

// Start builds the broker, binds its listeners, loads persisted state from
// cfg.DataDir and starts serving. table is the initial auth table (nil denies
// everyone). A port in use is returned as an error.
func Start(cfg Config, table *Table) (*Broker, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	if table == nil {
		table, _ = NewTable()
	}
	b := &Broker{cfg: cfg, gate: newGate(cfg.MaxPendingConnects)}
	b.policy = newPolicy(table, &b.cfg)
	b.srv = mqtt.New(&mqtt.Options{
		InlineClient:           true,
		Capabilities:           b.capabilities(),
		Logger:                 mochiLogger(cfg.Logger),
		SysTopicResendInterval: 10,
	})
	b.policy.srv = b.srv
	// Retained payloads over 1 KiB are held deflated (a fork patch): at
	// 10,000 devices the Home Assistant discovery documents (~4.7 KB each)
	// and skills reports (~1.5 KB) were 52 of the 67 MB of retained
	// payloads, and repetitive JSON deflates to a fifth. Each is inflated
	// again only when a subscription reads it back (docs/broker.md). A
	// dictionary of sample documents (cfg.RetainedDictionary) cuts a
	// device's discovery document from ~690 to ~115 deflated bytes.
	b.srv.Topics.Retained.CompressPayloadsAbove(retainedCompressAbove, cfg.RetainedDictionary)
	// mochi keeps its inline client in the client table under the id
	// "inline", where a remote client with that id would take it over and
	// every later controller publish would fail. The broker keeps the
	// pointer and takes it out of the table: no remote id can reach it.
	b.inline, _ = b.srv.Clients.Get(mqtt.InlineClientId)
	b.srv.Clients.Delete(mqtt.InlineClientId)
	if err := b.start(); err != nil {
		b.abort()
		return nil, err
	}
	return b, nil
}

// retainedCompressAbove is the payload size above which a retained message
// is held deflated.
const retainedCompressAbove = 1024

func (b *Broker) capabilities() *mqtt.Capabilities {
	caps := mqtt.NewDefaultServerCapabilities()
	// 0 = no broker-imposed expiry. mochi's default (24 h) deletes every
	// retained message a day after it was stored, and retained device state
	// must never expire; non-retained messages are capped in policy.OnPublish.
	caps.MaximumMessageExpiryInterval = 0
	caps.MaximumPacketSize = b.cfg.MaxPacketSize
	caps.MaximumInflight = b.cfg.MaxInflight
	caps.ReceiveMaximum = min(b.cfg.MaxInflight, defaultReceiveMaximum)
	caps.MaximumClientWritesPending = b.cfg.MaxWritesPending
	caps.MaximumClientWritesPendingBytes = b.cfg.MaxQueuedBytes
	// QoS 0 messages are bounded by the memory they hold (1 KiB a packet
	// plus topic and payload), up to the same MaxQueuedBytes, not by the
	// count: a subscriber behind in a burst of small messages keeps them
	// instead of losing all past 1024 (docs/broker.md, "QoS 0 under load").
	caps.MaximumQos0PendingBytes = b.cfg.MaxQueuedBytes
	caps.DisconnectSlowClients = true // slow.go
	caps.MaximumClients = b.cfg.MaxClients
	// The largest role cap; each role's is applied at CONNECT (connect.go).
	caps.MaximumSessionExpiryInterval = b.cfg.maxSessionExpiry()
	// Acks carry none of the publisher's user properties: mochi copies
	// them by default, and MQTT.js cannot parse such a PUBACK.
	caps.Compatibilities.NoInheritedPropertiesOnAck = true
	return caps
}

func (b *Broker) start() error {
	if err := b.srv.AddHook(b.policy, nil); err != nil {
		return fmt.Errorf("add policy hook: %w", err)
	}
	b.expiry = newRetainedExpiry(b.srv)
	if err := b.srv.AddHook(b.expiry, nil); err != nil {
		return fmt.Errorf("add retained expiry hook: %w", err)
	}
	if b.cfg.DataDir != "" {
		if err := os.MkdirAll(b.cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("broker data dir: %w", err)
		}
		st, err := openStore(b.cfg.DataDir, b.cfg.Logger)
		if err != nil {
			return err
		}
		if err := b.srv.AddHook(st, nil); err != nil {
			_ = st.Stop()
			return fmt.Errorf("add store hook: %w", err)
		}
		b.store = st
		b.expiry.onExpired = st.OnRetainedExpired
	}
	var err error
	admit := admission{gate: b.gate, maxSize: b.cfg.MaxConnectSize, timeout: b.cfg.ConnectTimeout}
	if b.tcp, err = listenTCP("mqtt", b.cfg.MQTTListen, b.cfg.TLS, admit); err != nil {
		return err
	}
	if err := b.srv.AddListener(b.tcp); err != nil {
		return fmt.Errorf("add mqtt listener: %w", err)
	}
	if b.cfg.WSListen != "" {
		if b.ws, err = listenWS("ws", b.cfg.WSListen, b.cfg.WSPath, b.cfg.TLS, admit); err != nil {
			return err
		}
		if err := b.srv.AddListener(b.ws); err != nil {
			return fmt.Errorf("add websocket listener: %w", err)
		}
	}
	if err := b.srv.Serve(); err != nil {
		return fmt.Errorf("serve mqtt: %w", err)
	}
	if b.swept = b.expiry.start(); !b.swept {
		b.cfg.Logger.Warn("mochi's retained expiry sweep not found; it keeps running (copies every retained message each second)")
	}
	return nil
}

// abort releases what a failed start acquired.
func (b *Broker) abort() { _ = b.Close() }

// Addr returns the bound address of the MQTT TCP listener.
func (b *Broker) Addr() string { return b.tcp.Address() }

// WSAddr returns the bound address of the websocket listener, or "" when off.
func (b *Broker) WSAddr() string {
	if b.ws == nil {
		return ""
	}
	return b.ws.Address()
}

// URL returns the mqtt:// (or mqtts://) URL of the TCP listener.
func (b *Broker) URL() string { return b.tcp.Protocol() + "://" + b.Addr() }

// SetTable replaces the auth table atomically and disconnects every client
// whose credentials the new table no longer proves.
func (b *Broker) SetTable(t *Table) {
	for _, cl := range b.policy.replace(t) {
		b.cfg.Logger.Info("disconnecting client: credentials revoked", "client", cl.ID, "username", string(cl.Properties.Username))
		// A revoked client's Will must not fire: it would re-create retained
		// state (offline) that the controller has just cleared.
		atomic.StoreUint32(&cl.Properties.Will.Flag, 0)
		_ = b.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
	}
}

// Table returns the current auth table.
func (b *Broker) Table() *Table { return b.policy.table.Load() }

// Stats returns the broker's counters (clients, messages, bytes, drops, and
// what each limit refused).
func (b *Broker) Stats() Stats {
	i := b.srv.Info.Clone()
	c := &b.policy.stats
	return Stats{
		ClientsConnected: i.ClientsConnected, MessagesReceived: i.MessagesReceived,
		MessagesSent: i.MessagesSent, MessagesDropped: i.MessagesDropped,
		BytesReceived: i.BytesReceived, BytesSent: i.BytesSent, Retained: i.Retained,
		Subscriptions: i.Subscriptions, PendingConnects: b.gate.pending.Load(),

		ConnectsRefused: c.connectsRefused.Load(), PreauthClosed: b.gate.closed.Load(),
		ConnectionsOverLimit: c.overConnections.Load(), PublishesRefused: c.publishesRefused.Load(),
		PublishesThrottled: c.throttled.Load(), PayloadsRefused: c.payloadRefused.Load(),
		WillsRefused: c.willsRefused.Load(), SubscriptionsRefused: c.subscriptionsRefused.Load(),
		SlowClientsDisconnected: c.slowCut.Load(),
	}
}

// Stats are cumulative broker counters (gauges where noted).
type Stats struct {
	ClientsConnected, MessagesReceived, MessagesSent int64
	MessagesDropped                                  int64 // not queued towards a slow client
	BytesReceived, BytesSent, Retained               int64
	Subscriptions, PendingConnects                   int64 // gauges

	ConnectsRefused         int64 // CONNECTs refused: credentials, client id, Will, connection limit
	PreauthClosed           int64 // closed before authenticating: too many pending, too large, too slow, not CONNECT
	ConnectionsOverLimit    int64 // CONNECTs refused by an account's connection limit (also in ConnectsRefused)
	PublishesRefused        int64 // refused by the ACL, a reserved type, retain rules or a forged skill_id
	PublishesThrottled      int64 // refused by an account's publish rate limit
	PayloadsRefused         int64 // refused by a payload size, JSON depth or envelope check
	WillsRefused            int64 // Wills refused at CONNECT or dropped when due
	SubscriptionsRefused    int64 // filters refused by the subscription count or length limits
	SlowClientsDisconnected int64 // clients cut for not reading their messages
}

// Health is the state /healthz reports of the broker.
type Health struct {
	Listeners []ListenerHealth
	// Inline is an error when the gateway's own client cannot publish.
	Inline string
	// Store is the persistence error being retried, if any.
	Store string
}

// ListenerHealth is one listener's state.
type ListenerHealth struct {
	ID, Address string
	Serving     bool
	Error       string // the accept error being retried, if any
}

// Failing lists what is not working, for /healthz ("" when all is well).
func (h Health) Failing() []string {
	var out []string
	for _, l := range h.Listeners {
		if !l.Serving || l.Error != "" {
			out = append(out, "mqtt listener "+l.ID+" ("+l.Address+"): "+cmpOr(l.Error, "not serving"))
		}
	}
	if h.Inline != "" {
		out = append(out, "broker in-process client: "+h.Inline)
	}
	if h.Store != "" {
		out = append(out, "broker store: "+h.Store)
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Health returns the state of the listeners, the in-process client and the store.
func (b *Broker) Health() Health {
	var h Health
	if b.tcp != nil {
		h.Listeners = append(h.Listeners, b.tcp.health.state(b.tcp.id, b.tcp.Address()))
	}
	if b.ws != nil {
		h.Listeners = append(h.Listeners, b.ws.health.state(b.ws.id, b.ws.Address()))
	}
	if b.inline == nil || b.inline.Closed() {
		h.Inline = "closed"
	}
	if b.store != nil {
		h.Store = b.store.failure()
	}
	return h
}

// Close disconnects every client, stops the listeners, flushes the store and
// returns once everything the broker started has exited. It is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.tcp != nil {
			b.tcp.stopAccepting()
		}
		if b.ws != nil {
			_ = b.ws.ln.Close()
		}
		if b.swept {
			b.expiry.stop()
		}
		for _, cl := range b.srv.Clients.GetAll() {
			if !cl.Net.Inline {
				_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
			}
		}
		_ = b.srv.Close() // waits in the listeners' Close for the connections
	})
	return nil
}
