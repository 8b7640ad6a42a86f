package brokerbench

import (
	"fmt"
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
)

// Broker is a broker started for a run.
type Broker struct {
	Target
	secrets map[string]string // StartChorus's account secrets (ServeBroker sends them)
	close   func() error
	stats   func() broker.Stats
}

// Close stops the broker.
func (b *Broker) Close() error { return b.close() }

// Stats returns the broker's counters (Chorus only; zero for bare mochi).
func (b *Broker) Stats() broker.Stats {
	if b.stats == nil {
		return broker.Stats{}
	}
	return b.stats()
}

// StartChorus starts Chorus's broker on 127.0.0.1:0 with its store in
// dataDir ("": no store hook, named chorus-nostore) and clients operator accounts per role (publishers write the bus
// topic, subscribers read it). Every hook runs as in the gateway; the publish
// rate limit is raised out of the way (its bucket is still checked on every
// publish) so it measures the hooks' cost, not the limit.
func StartChorus(dataDir string, clients int) (*Broker, error) {
	secrets := map[string]string{}
	var accts []broker.Account
	for _, role := range []string{"pub", "sub"} {
		for i := range clients {
			name := fmt.Sprintf("%s%d", role, i)
			s, err := broker.NewSecret()
			if err != nil {
				return nil, err
			}
			secrets[name] = s
			accts = append(accts, broker.OperatorAccount("bench-"+name, broker.HashSecret(s)))
		}
	}
	table, err := broker.NewTable(accts...)
	if err != nil {
		return nil, err
	}
	// The policy runs in full (ACL, payload checks, the rate bucket), with a
	// rate the load cannot reach, so its cost is in the figures.
	b, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", DataDir: dataDir,
		Operator: broker.RoleLimits{PublishRate: 1e9, PublishBurst: 1 << 30}}, table)
	if err != nil {
		return nil, err
	}
	name := KindChorus
	if dataDir == "" {
		name = KindChorusNoStore
	}
	return &Broker{Target: Target{Name: name, Addr: b.Addr(), Login: chorusLogin(secrets)}, secrets: secrets,
		close: b.Close, stats: b.Stats}, nil
}

// chorusLogin is the Login of a broker StartChorus started, from the
// secrets of its accounts (by "pub0", "sub3", ...).
func chorusLogin(secrets map[string]string) func(role string, i int) (string, string) {
	return func(role string, i int) (string, string) {
		name := fmt.Sprintf("%s%d", role, i)
		return "operator:bench-" + name, secrets[name]
	}
}

// allowHook is mochi's auth.AllowHook, written out because importing
// hooks/auth pulls yaml.v3 into go.mod for a five-line hook.
type allowHook struct{ mqtt.HookBase }

func (h *allowHook) ID() string { return "allow-all" }
func (h *allowHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}
func (h *allowHook) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (h *allowHook) OnACLCheck(*mqtt.Client, string, bool) bool              { return true }

// StartBareMochi starts mochi with no hook but an allow-all one on 127.0.0.1:0,
// with the same per-client write queue and expiry settings as Chorus's
// broker (broker.DefaultWritesPending), so the hooks are the difference.
func StartBareMochi() (*Broker, error) {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumClientWritesPending = broker.DefaultWritesPending
	caps.MaximumClientWritesPendingBytes = broker.DefaultMaxQueuedBytes
	caps.MaximumQos0PendingBytes = broker.DefaultMaxQueuedBytes
	caps.DisconnectSlowClients = true
	caps.MaximumInflight = broker.DefaultMaxInflight
	caps.MaximumMessageExpiryInterval = 0
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(new(allowHook), nil); err != nil {
		return nil, err
	}
	ln := listeners.NewTCP(listeners.Config{ID: "bench", Address: "127.0.0.1:0"})
	if err := srv.AddListener(ln); err != nil {
		return nil, err
	}
	if err := srv.Serve(); err != nil {
		return nil, err
	}
	return &Broker{Target: Target{Name: KindBareMochi, Addr: ln.Address()}, close: srv.Close}, nil
}
