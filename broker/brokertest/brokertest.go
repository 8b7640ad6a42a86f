// Package brokertest starts a real embedded broker on loopback for tests and
// connects real MQTT 5 clients to it.
package brokertest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
)

// Start runs a broker on 127.0.0.1:0 with the given accounts and closes it in
// t.Cleanup. cfg may set DataDir and limits; listeners default to loopback.
// Its log goes to the test's output (Logger).
func Start(t testing.TB, cfg broker.Config, accounts ...broker.Account) *broker.Broker {
	t.Helper()
	if cfg.MQTTListen == "" {
		cfg.MQTTListen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger(t)
	}
	table, err := broker.NewTable(accounts...)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	b, err := broker.Start(cfg, table)
	if err != nil {
		t.Fatalf("brokertest: start broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Unlimited returns a Config with the per-account rate and connection
// limits off, for tests about something else that connect an account many
// times or publish fast.
func Unlimited() broker.Config {
	off := broker.RoleLimits{Connections: -1, PublishRate: -1}
	return broker.Config{Device: off, Skill: off, Integration: off, Operator: off}
}

// Logger returns a logger into tb's output: shown when the test fails (or
// under -v), so a failing test carries its components' logs. Info and
// above; Debug too when CHORUS_TEST_LOG is set. Lines written after the
// test's cleanups have run (a goroutine that outlives it) are dropped:
// testing panics on output after a test completes.
func Logger(tb testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("CHORUS_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	w := &testOutput{w: tb.Output()}
	tb.Cleanup(w.close) // registered first, so it runs after the components' own cleanups
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// testOutput writes to a test's output until close.
type testOutput struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (o *testOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	return o.w.Write(p)
}

func (o *testOutput) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// Device is a device account with its plain secret and skill signing key.
type Device struct {
	Account broker.Account
	Secret  string
	Key     ed25519.PrivateKey
}

// NewDevice returns a device account for id with a fresh secret and key (version 1).
func NewDevice(t testing.TB, id string) Device {
	t.Helper()
	secret := mustSecret(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Device{Account: broker.DeviceAccount(id, broker.HashSecret(secret), pub, 1), Secret: secret, Key: priv}
}

// NewOperator returns an operator account and its secret.
func NewOperator(t testing.TB, name string) (broker.Account, string) {
	t.Helper()
	s := mustSecret(t)
	return broker.OperatorAccount(name, broker.HashSecret(s)), s
}

// NewIntegration returns an integration account and its secret.
func NewIntegration(t testing.TB, name string, allow ...string) (broker.Account, string) {
	t.Helper()
	s := mustSecret(t)
	return broker.IntegrationAccount(name, broker.HashSecret(s), allow...), s
}

func mustSecret(t testing.TB) string {
	t.Helper()
	s, err := broker.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Client is a plain MQTT 5 client (no reconnect) that records what it receives.
type Client struct {
	*paho.Client
	Connack *paho.Connack
	msgs    chan *paho.Publish
	mu      sync.Mutex
	closed  bool
}

// ConnectOptions tweak Connect.
type ConnectOptions struct {
	// ClientID is placed under the username as the broker requires
	// (docs/security.md, "Client identifiers"): "d" connecting as pi-1 is
	// sent as "pi-1/d"; an id already under the username, or empty, is sent
	// as it is. RawClientID sends ClientID unchanged (tests of the rule).
	ClientID    string
	RawClientID bool
	CleanStart  bool
	Expiry      uint32 // session expiry interval, seconds
	Will        *paho.WillMessage
	WillProps   *paho.WillProperties
}

// Connect dials addr and sends CONNECT. A refused CONNECT returns the error
// and the CONNACK (whose ReasonCode says why).
func Connect(t testing.TB, addr, username, password string, o ConnectOptions) (*Client, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if !o.RawClientID && o.ClientID != "" && username != "" && o.ClientID != username && !strings.HasPrefix(o.ClientID, username+"/") {
		o.ClientID = username + "/" + o.ClientID
	}
	c := &Client{msgs: make(chan *paho.Publish, 1024)}
	c.Client = paho.NewClient(paho.ClientConfig{
		Conn:     conn,
		ClientID: o.ClientID,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			select {
			case c.msgs <- pr.Packet:
			default:
				t.Errorf("brokertest: client %s: receive buffer full", o.ClientID)
			}
			return true, nil
		}},
	})
	cp := &paho.Connect{
		KeepAlive: 30, ClientID: o.ClientID, CleanStart: o.CleanStart || o.Expiry == 0,
		Username: username, UsernameFlag: username != "",
		Password: []byte(password), PasswordFlag: password != "",
		WillMessage: o.Will, WillProperties: o.WillProps,
	}
	if o.Expiry > 0 {
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &o.Expiry}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := c.Client.Connect(ctx, cp)
	c.Connack = ca
	if err != nil {
		_ = conn.Close()
		return c, err
	}
	t.Cleanup(c.Close)
	return c, nil
}

// MustConnect is Connect that fails the test on error.
func MustConnect(t testing.TB, addr, username, password string, o ConnectOptions) *Client {
	t.Helper()
	c, err := Connect(t, addr, username, password, o)
	if err != nil {
		t.Fatalf("connect %s as %q: %v", addr, username, err)
	}
	return c
}

// Close disconnects cleanly; it is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	_ = c.Client.Disconnect(&paho.Disconnect{ReasonCode: 0})
}

// Sub subscribes to filter at QoS 1 and returns the reason code the broker gave.
func (c *Client) Sub(t testing.TB, filter string) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if sa == nil || len(sa.Reasons) == 0 {
		t.Fatalf("subscribe %s: %v", filter, err)
	}
	return sa.Reasons[0]
}

// Pub publishes at QoS 1 and returns the PUBACK reason code (0 = accepted).
func (c *Client) Pub(t testing.TB, topic string, payload []byte, retain bool) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: retain, Payload: payload})
	if r == nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
	return r.ReasonCode
}

// Next waits up to d for the next message.
func (c *Client) Next(d time.Duration) (*paho.Publish, bool) {
	select {
	case m := <-c.msgs:
		return m, true
	case <-time.After(d):
		return nil, false
	}
}

// Expect waits for a message on topic (skipping others) and returns it.
func (c *Client) Expect(t testing.TB, topic string, d time.Duration) *paho.Publish {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-c.msgs:
			if m.Topic == topic {
				return m
			}
		case <-deadline:
			t.Fatalf("no message on %s within %s", topic, d)
			return nil
		}
	}
}
