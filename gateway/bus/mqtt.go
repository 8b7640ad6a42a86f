package bus

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// Defaults of MQTTConfig.
const (
	DefaultKeepAlive      = 30 // seconds
	DefaultMQTTQueueSize  = 1024
	defaultConnectTimeout = 10 * time.Second
	subscribeTimeout      = 10 * time.Second
	closeTimeout          = 5 * time.Second
	backoffMin            = 500 * time.Millisecond
	backoffMax            = 30 * time.Second
	// DefaultUnreachableLogEvery is how often a broker that stays
	// unreachable is logged again (the first failure is logged at once).
	DefaultUnreachableLogEvery = 30 * time.Second
)

// MQTTConfig configures DialMQTT. Only URL is required.
type MQTTConfig struct {
	URL string // mqtt://host:port, mqtts://, ws://host:port/path, wss://

	ClientID           string // "" = "<username>/chorus-<hex>" (random), an id under the account (docs/security.md)
	Username, Password string

	Will      *Packet // sent by the broker when the connection is lost without DISCONNECT
	WillDelay uint32  // seconds
	// WillFunc, when set, is called before every connection attempt and its
	// result replaces Will, so each connection can carry its own Will (the
	// agent stamps its birth session number on it).
	WillFunc func() *Packet

	SessionExpiry uint32 // seconds; 0 = the broker drops the session at disconnect
	CleanStart    bool   // first connection only; reconnects resume the session
	KeepAlive     uint16 // seconds; 0 = DefaultKeepAlive
	TLS           *tls.Config
	QueueSize     int // inbound dispatch queue; 0 = DefaultMQTTQueueSize
	Logger        *slog.Logger

	// OnConnect is called after every connection, the first one included,
	// once the subscriptions are restored: the agent re-publishes its
	// retained state there. It runs on the transport's own goroutine (never
	// concurrently with itself, never on paho's) with a context cancelled by
	// Close. DialMQTT returns only after the first call has returned, so the
	// callback must not reach the transport through DialMQTT's result: use
	// MQTTFromContext(ctx).
	OnConnect func(ctx context.Context)

	// UnreachableLogEvery rate-limits the WARN about a broker that cannot
	// be reached: the first failed attempt is logged at once, then one line
	// (with the count of attempts) at most this often. 0 = DefaultUnreachableLogEvery.
	UnreachableLogEvery time.Duration
}

func (c *MQTTConfig) setDefaults() error {
	if c.ClientID == "" {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("client id: %w", err)
		}
		c.ClientID = "chorus-" + hex.EncodeToString(b)
		if c.Username != "" {
			c.ClientID = c.Username + "/" + c.ClientID
		}
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultMQTTQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.UnreachableLogEvery <= 0 {
		c.UnreachableLogEvery = DefaultUnreachableLogEvery
	}
	return nil
}

// parseURL accepts the schemes autopaho dials (reference/go-deps.md §2).
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("mqtt url %q: %w", s, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp", "mqtts", "ssl", "tls", "ws", "wss":
	default:
		return nil, fmt.Errorf("mqtt url %q: scheme must be mqtt, mqtts, ws or wss", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("mqtt url %q: no host", s)
	}
	return u, nil
}

// MQTT is a Transport over a network connection to an MQTT 5 broker. It
// reconnects with exponential backoff (500 ms to 30 s) and re-subscribes every
// active subscription on each connection, whether or not the broker kept the
// session. Deliveries are handed from paho's receive loop to a bounded queue
// and dispatched, in arrival order, on one goroutine to every handler whose
// filter matches the topic.
type MQTT struct {
	cfg  MQTTConfig
	url  *url.URL
	log  *slog.Logger
	cm   *autopaho.ConnectionManager
	disp *dispatcher

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	drain  context.Context // cancelled by Drain: publishes stop waiting for a connection
	// gone is cancelled once drained and the connection is down, in either
	// order: a publish waiting for its acknowledgement then gives up, since
	// paho keeps a QoS 1 message in flight across a lost connection and
	// waits for its PUBACK as long as the caller's context allows.
	gone     context.Context
	markGone context.CancelFunc
	// up is true from autopaho's OnConnectionUp to its OnConnectionDown: a
	// drained publish uses the connection while it is up and fails at once
	// while it is not.
	up        atomic.Bool
	stopWait  context.CancelFunc
	ups       chan struct{} // connection-up signals, coalesced
	ready     chan struct{} // closed after the first connection's restore and OnConnect
	refused   chan error    // a permanent CONNACK refusal before ready
	wg        sync.WaitGroup
	closeOnce sync.Once
	done      chan struct{}

	// syncMu serialises SUBSCRIBE and UNSUBSCRIBE so what the broker holds
	// follows the level of subs. onBroker (guarded by syncMu) is the set of
	// filters subscribed on the current connection.
	syncMu   sync.Mutex
	onBroker map[string]bool

	// mu guards the fields below; never held across I/O or a callback.
	mu      sync.Mutex
	subs    map[string]map[uint64]func(Packet) // filter -> handlers
	nextID  uint64
	closed  bool
	lastErr error // the last connection error, for DialMQTT's timeout message
	// failed counts the failed attempts since the last connection (or
	// start); loggedAt is when the last of them was logged.
	failed   int
	loggedAt time.Time
}

var _ Transport = (*MQTT)(nil)

type mqttKey struct{}

// MQTTFromContext returns the transport whose OnConnect callback received
// ctx, or nil.
func MQTTFromContext(ctx context.Context) *MQTT {
	m, _ := ctx.Value(mqttKey{}).(*MQTT)
	return m
}

// DialMQTT connects to cfg.URL and returns once the first connection is up,
// its subscriptions restored and OnConnect run. A broker that refuses the
// first CONNECT (bad credentials, not authorized, banned…) fails it at once
// with an error naming the reason; network errors are retried until ctx ends.
// Later disconnections are retried forever, until Close.
func DialMQTT(ctx context.Context, cfg MQTTConfig) (*MQTT, error) {
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := newMQTT(cfg, u)
	cm, err := autopaho.NewConnection(context.Background(), m.clientConfig())
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", u.Redacted(), err)
	}
	m.cm = cm
	m.wg.Add(1)
	go m.run()
	select {
	case <-m.ready:
		return m, nil
	case err := <-m.refused:
		m.Close()
		return nil, err
	case <-ctx.Done():
		m.Close()
		return nil, m.dialTimeout(ctx.Err())
	}
}

func newMQTT(cfg MQTTConfig, u *url.URL) *MQTT {
	ctx, cancel := context.WithCancel(context.Background())
	drain, stopWait := context.WithCancel(ctx)
	gone, markGone := context.WithCancel(ctx)
	m := &MQTT{
		cfg: cfg, url: u, log: cfg.Logger.With("mqtt", u.Redacted()),
		ctx: ctx, cancel: cancel, drain: drain, stopWait: stopWait, gone: gone, markGone: markGone,
		ups: make(chan struct{}, 1), ready: make(chan struct{}), refused: make(chan error, 1),
		done: make(chan struct{}), onBroker: map[string]bool{},
		subs: map[string]map[uint64]func(Packet){},
	}
	m.disp = newDispatcher(cfg.QueueSize, m.log)
	return m
}

func (m *MQTT) dialTimeout(err error) error {
	m.mu.Lock()
	last := m.lastErr
	m.mu.Unlock()
	if last != nil {
		return fmt.Errorf("connect %s: %w (last attempt: %v)", m.url.Redacted(), err, last)
	}
	return fmt.Errorf("connect %s: %w", m.url.Redacted(), err)
}

func (m *MQTT) clientConfig() autopaho.ClientConfig {
	c := m.cfg
	exp := autopaho.NewExponentialBackoff(backoffMin, backoffMax, backoffMin, 2)
	ac := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{m.url},
		TlsCfg:                        c.TLS,
		KeepAlive:                     c.KeepAlive,
		CleanStartOnInitialConnection: c.CleanStart,
		SessionExpiryInterval:         c.SessionExpiry,
		ReconnectBackoff:              exp, // attempt 0 waits 0
		ConnectTimeout:                defaultConnectTimeout,
		ConnectUsername:               c.Username,
		OnConnectionUp:                func(*autopaho.ConnectionManager, *paho.Connack) { m.up.Store(true); m.reached(); m.signalUp() },
		OnConnectionDown:              m.onDown,
		OnConnectError:                m.onConnectError,
		ClientConfig: paho.ClientConfig{
			ClientID:          c.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){m.onPublish},
		},
	}
	if c.Password != "" {
		ac.ConnectPassword = []byte(c.Password)
	}
	if c.Will != nil {
		ac.WillMessage, ac.WillProperties = willOf(c.Will, c.WillDelay)
	}
	// No Receive Maximum is announced (the protocol's 65,535 applies, and
	// the broker's in-flight bound of 1,024 comes first): mochi v2.7.9 loses
	// a unit of a client's send quota for every message it had to hold back
	// for want of it, so a small one would, after a burst, stop every QoS 1
	// message to this client (docs/broker.md, "Known limits").
	if c.WillFunc != nil {
		ac.ConnectPacketBuilder = func(pc *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			if w := c.WillFunc(); w != nil {
				pc.WillMessage, pc.WillProperties = willOf(w, c.WillDelay)
			}
			return pc, nil
		}
	}
	return ac
}

func willOf(p *Packet, delay uint32) (*paho.WillMessage, *paho.WillProperties) {
	w := &paho.WillMessage{Topic: p.Topic, Payload: p.Payload, QoS: p.QoS, Retain: p.Retain}
	wp := &paho.WillProperties{
		ContentType: p.ContentType, ResponseTopic: p.ResponseTopic,
		CorrelationData: p.CorrelationData, User: userProps(p.User),
	}
	if delay > 0 {
		wp.WillDelayInterval = &delay
	}
	if p.MessageExpiry > 0 {
		e := p.MessageExpiry
		wp.MessageExpiry = &e
	}
	return w, wp
}

// signalUp runs on autopaho's manager goroutine, which must not block: the
// restore happens on m.run.
func (m *MQTT) signalUp() {
	select {
	case m.ups <- struct{}{}:
	default: // a restore is already pending; it reads the current level
	}
}

func (m *MQTT) onDown() bool {
	m.up.Store(false)
	if m.drain.Err() != nil { // Drain came first (see Drain)
		m.markGone()
	}
	select {
	case <-m.ctx.Done():
	default:
		m.log.Warn("mqtt connection lost; reconnecting")
	}
	return true
}

// onConnectError is called by autopaho for each failed attempt. Before the
// first connection a permanent refusal ends DialMQTT; afterwards it is logged
// and retried with backoff (the credentials may be restored).
func (m *MQTT) onConnectError(err error) {
	var ce *autopaho.ConnackError
	if errors.As(err, &ce) {
		err = &ConnectError{URL: m.url.Redacted(), Code: ce.ReasonCode, Reason: ce.Reason}
	}
	permanent := ce != nil && permanentRefusal(ce.ReasonCode)
	m.mu.Lock()
	m.lastErr = err
	m.failed++
	n, say := m.failed, m.loggedAt.IsZero() || time.Since(m.loggedAt) >= m.cfg.UnreachableLogEvery
	if say {
		m.loggedAt = time.Now()
	}
	m.mu.Unlock()
	afterFirst := false // DialMQTT has returned
	select {
	case <-m.ready:
		afterFirst = true
	default:
	}
	switch {
	case afterFirst && say:
		m.log.Warn("mqtt reconnect failed; retrying", "broker", m.url.Redacted(), "error", err.Error(), "attempts", n)
	case afterFirst:
	case permanent: // DialMQTT fails with it, and its caller says so
		select {
		case m.refused <- err:
		default:
		}
	case say:
		m.log.Warn("cannot reach the MQTT broker; retrying", "broker", m.url.Redacted(), "error", err.Error(), "attempts", n)
	}
}

// reached notes a connection after failed attempts and resets the count.
func (m *MQTT) reached() {
	m.mu.Lock()
	n := m.failed
	m.failed, m.loggedAt = 0, time.Time{}
	m.mu.Unlock()
	if n > 0 {
		m.log.Info("reached the MQTT broker", "broker", m.url.Redacted(), "failed_attempts", n)
	}
}

// Drain makes publishing fail at once, instead of waiting, while there is
// no connection; a publish over a live connection goes on as before. A
// process shutting down calls it first, so its last words are sent when the
// broker is there and shutdown is not held up when it is not: a publish
// already waiting for its acknowledgement gives up too once the connection
// is down. Idempotent.
func (m *MQTT) Drain() {
	m.stopWait()
	// Drain and onDown each set their own state before reading the other's,
	// so whichever comes second marks the connection gone.
	if !m.up.Load() {
		m.markGone()
	}
}

// run owns the reaction to each (re)connection: restore the subscriptions,
// then OnConnect.
func (m *MQTT) run() {
	defer m.wg.Done()
	first := true
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.ups:
		}
		m.restore()
		m.callOnConnect()
		if first {
			first = false
			close(m.ready)
		}
	}
}

func (m *MQTT) callOnConnect() {
	if m.cfg.OnConnect == nil || m.ctx.Err() != nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("mqtt OnConnect panicked", "panic", fmt.Sprint(r))
		}
	}()
	m.cfg.OnConnect(context.WithValue(m.ctx, mqttKey{}, m))
}

// Done is closed once Close has finished.
func (m *MQTT) Done() <-chan struct{} { return m.done }

// Dropped reports how many deliveries were dropped because the dispatch
// queue stayed full.
func (m *MQTT) Dropped() uint64 { return m.disp.dropped.Load() }

// Close sends DISCONNECT (so the broker discards the Will), stops
// reconnecting and waits for every goroutine the transport started.
// Handlers are not called after Close returns. It is idempotent.
func (m *MQTT) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		m.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if m.cm != nil {
			if err := m.cm.Disconnect(ctx); err != nil {
				m.log.Warn("mqtt disconnect", "err", err)
			}
		}
		m.disp.close()
		m.wg.Wait()
		close(m.done)
	})
	<-m.done
	return nil
}
