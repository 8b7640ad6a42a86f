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
	policy *policy
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
	b := &Broker{cfg: cfg}
	b.policy = newPolicy(table, &b.cfg)
	b.srv = mqtt.New(&mqtt.Options{
		InlineClient:           true,
		Capabilities:           b.capabilities(),
		Logger:                 mochiLogger(cfg.Logger),
		SysTopicResendInterval: 10,
	})
	if err := b.start(); err != nil {
		b.abort()
		return nil, err
	}
	return b, nil
}

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
	caps.MaximumClients = b.cfg.MaxClients
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
	if b.tcp, err = listenTCP("mqtt", b.cfg.MQTTListen, b.cfg.TLS); err != nil {
		return err
	}
	if err := b.srv.AddListener(b.tcp); err != nil {
		return fmt.Errorf("add mqtt listener: %w", err)
	}
	if b.cfg.WSListen != "" {
		if b.ws, err = listenWS("ws", b.cfg.WSListen, b.cfg.WSPath, b.cfg.TLS); err != nil {
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

// Stats returns the broker's counters (clients, messages, bytes, drops).
func (b *Broker) Stats() Stats {
	i := b.srv.Info.Clone()
	return Stats{
		ClientsConnected: i.ClientsConnected, MessagesReceived: i.MessagesReceived,
		MessagesSent: i.MessagesSent, MessagesDropped: i.MessagesDropped,
		BytesReceived: i.BytesReceived, BytesSent: i.BytesSent, Retained: i.Retained,
		PublishesThrottled: b.policy.limits.throttled.Load(), PayloadsRefused: b.policy.payloadRefused.Load(),
	}
}

// Stats are cumulative broker counters.
type Stats struct {
	ClientsConnected, MessagesReceived, MessagesSent, MessagesDropped int64
	BytesReceived, BytesSent, Retained                                int64

	PublishesThrottled int64 // refused by a client's publish rate limit
	PayloadsRefused    int64 // refused by a payload size or JSON depth limit
}

// Close disconnects every client, stops the listeners, flushes the store and
// returns once everything the broker started has exited. It is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.tcp != nil {
			_ = b.tcp.ln.Close()
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
