package broker

import (
	"bytes"
	"log/slog"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mochi-mqtt/server/v2/system"
)

// policy is the auth and ACL hook. It decides from the current *Table alone:
// nothing on the packet path does I/O (STYLE.md §8). One decision
// (policy.check) covers every message a remote client makes the broker carry:
// its publishes, and its Will at CONNECT and again when the Will is sent.
// Inline (in-process) publishes are the gateway's own and are not checked;
// the components that make them enforce their own policy.
type policy struct {
	mqtt.HookBase
	table     atomic.Pointer[Table]
	cfg       *Config
	srv       *mqtt.Server // set before Serve; used to answer refused CONNECTs
	maxExpiry uint32
	log       *slog.Logger

	// sessions holds a *session per authenticated connection, keyed by the
	// client, from OnConnect until OnDisconnect (or the sweep, for a client
	// that failed before mochi's disconnect hook).
	sessions clientMap[*session]
	accounts accounts
	stats    counters

	connectLog, publishLog, slowLog *logLimiter

	onGone atomic.Pointer[func(username string)] // NotifyDisconnect
}

// counters are the policy's cumulative counts (Stats).
type counters struct {
	connectsRefused      atomic.Int64
	overConnections      atomic.Int64
	publishesRefused     atomic.Int64
	throttled            atomic.Int64
	payloadRefused       atomic.Int64
	willsRefused         atomic.Int64
	subscriptionsRefused atomic.Int64
	dropped              atomic.Int64
	slowCut              atomic.Int64
}

// Refusal log lines per second, per kind: a flood of refusals is counted in
// full (Stats) but logged as a sample.
const refusalLogsPerSecond = 10

func newPolicy(t *Table, cfg *Config) *policy {
	p := &policy{cfg: cfg, maxExpiry: uint32(cfg.MaxMessageExpiry), log: cfg.Logger}
	p.accounts.byName = make(map[string]*accountState)
	p.connectLog = newLogLimiter(refusalLogsPerSecond, time.Second, cfg.Now)
	p.publishLog = newLogLimiter(refusalLogsPerSecond, time.Second, cfg.Now)
	p.slowLog = newLogLimiter(refusalLogsPerSecond, time.Second, cfg.Now)
	p.table.Store(t)
	return p
}

func (p *policy) ID() string { return "chorus-policy" }

func (p *policy) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mqtt.OnConnect, mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish, mqtt.OnWill,
		mqtt.OnSubscribe, mqtt.OnPublishDropped, mqtt.OnPacketEncode, mqtt.OnDisconnect, mqtt.OnSysInfoTick,
	}, []byte{b})
}

// session returns the policy's state of an authenticated client, or nil.
func (p *policy) session(cl *mqtt.Client) *session {
	s, _ := p.sessions.load(cl)
	return s
}

// OnACLCheck decides subscriptions and each delivery (read). A publish
// (write) is decided in OnPublish instead, after mochi has resolved a topic
// alias, so the refusal can be answered the way the protocol wants (policy.refuse);
// here every write passes.
func (p *policy) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	if write {
		return true
	}
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	return ok && coveredBy(a.Subscribe, topic)
}

func (p *policy) OnDisconnect(cl *mqtt.Client, err error, _ bool) {
	s, ok := p.sessions.remove(cl)
	if !ok {
		return
	}
	p.accounts.leave(s.username, cl)
	p.gone(s.username)
	if cause := cl.StopCause(); cause == packets.ErrPendingClientWritesExceeded {
		p.stats.slowCut.Add(1)
	}
}

// OnSysInfoTick runs on mochi's event loop every SysTopicResendInterval. It
// drops the state of clients that closed without an OnDisconnect (mochi
// skips it when a client fails between authentication and the end of its
// CONNACK) and forgets accounts that are gone and whose bucket has refilled.
func (p *policy) OnSysInfoTick(*system.Info) {
	p.sessions.each(func(cl *mqtt.Client, _ *session) {
		if !cl.Closed() {
			return
		}
		// Removed here or by OnDisconnect, whichever comes first: the
		// account is left once.
		if s, ok := p.sessions.remove(cl); ok {
			p.accounts.leave(s.username, cl)
			p.gone(s.username)
		}
	})
	p.accounts.sweep(p.cfg.Now())
}

// replace swaps the table and returns the clients whose credentials no longer
// authenticate; the caller disconnects them.
func (p *policy) replace(t *Table) []*mqtt.Client {
	p.table.Store(t)
	var gone []*mqtt.Client
	p.sessions.each(func(cl *mqtt.Client, s *session) {
		if _, err := t.Authenticate(s.username, s.password); err != nil {
			gone = append(gone, cl)
		}
	})
	return gone
}

// sessionCount counts the authenticated connections the policy tracks (tests).
func (p *policy) sessionCount() int {
	return p.sessions.len()
}
