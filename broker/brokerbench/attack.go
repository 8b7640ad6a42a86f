package brokerbench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// AttackConfig configures Attack. The zero value works.
type AttackConfig struct {
	RoundTrips int           // measured per phase (default 300)
	Silent     int           // silent strangers in the pre-auth flood (default 2000, as in the review)
	QueueBytes int64         // the broker's max_queued_bytes (0 = its default)
	Warmup     time.Duration // each attack runs this long before measuring (default 1 s)
	Logger     *slog.Logger
	// MachineLoad reads the machine's load after the run (cmd/chorus wires
	// agentbench.LoadAvg); nil reports "n/a".
	MachineLoad func() string
}

// AttackPhase is the well-behaved device's round trip during one phase.
type AttackPhase struct {
	Name     string  `json:"name"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	RatioP50 float64 `json:"ratio_p50_to_idle"`
	RatioP99 float64 `json:"ratio_p99_to_idle"`
	Note     string  `json:"note,omitempty"`
}

// AttackReport is Attack's result.
type AttackReport struct {
	Phases []AttackPhase `json:"phases"`
	Stats  broker.Stats  `json:"broker_stats"`
	Load   string        `json:"machine_load"`
}

// Attack measures what an attack costs a well-behaved device (docs/security.md,
// docs/benchmarks.md): the round trip of the device's QoS 1 bus message back
// to itself through Chorus's broker, with the default limits, while idle and
// while each of three attacks runs on the same broker:
//   - a flood from one skill account: its one connection publishing as fast
//     as the socket takes, and a stream of second connections (refused);
//   - a pre-authentication flood: strangers holding silent connections and
//     announcing 10 MiB CONNECTs of which they send a part;
//   - a stuck subscriber: an integration subscribed to the whole tree that
//     never reads, reconnecting when cut, while another device publishes
//     64 KiB messages it would receive.
//
// Attackers, broker and device share one process and its cores, so the
// ratios include the attackers' own CPU.
func Attack(ctx context.Context, cfg AttackConfig) (AttackReport, error) {
	if cfg.RoundTrips == 0 {
		cfg.RoundTrips = 300
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Silent == 0 {
		cfg.Silent = 2000
	}
	if cfg.MachineLoad == nil {
		cfg.MachineLoad = func() string { return "n/a" }
	}
	env, err := startAttackBroker(cfg.Logger, cfg.QueueBytes)
	if err != nil {
		return AttackReport{}, err
	}
	defer env.b.Close()
	env.silent = cfg.Silent
	good, err := env.newPinger(ctx)
	if err != nil {
		return AttackReport{}, err
	}
	defer good.close()

	var rep AttackReport
	// Each attack is measured once it has met its limit (bit), so the
	// figures are of the broker defending, not of a warm-up.
	phases := []struct {
		name, note string
		run        func(ctx context.Context) error
		bit        func(broker.Stats) bool
	}{
		{"idle", "", nil, nil},
		{"skill flood", "one skill account: QoS 0 publishes as fast as its socket takes, plus refused second connections", env.skillFlood,
			func(s broker.Stats) bool { return s.PublishesThrottled > 16 && s.ConnectionsOverLimit > 0 }},
		{"pre-auth flood", fmt.Sprintf("%d silent sockets and 30 half-sent 10 MiB CONNECTs, each reopened as the broker closes it", cfg.Silent), env.preauthFlood,
			func(s broker.Stats) bool { return s.PreauthClosed >= 30 }},
		{"stuck subscriber", "an integration on chorus/v1/# that never reads (reconnecting when cut); another device publishes 64 KiB messages at its full rate", env.stuckSubscriber,
			func(s broker.Stats) bool { return s.SlowClientsDisconnected > 0 }},
	}
	var idle AttackPhase
	for _, ph := range phases {
		p, err := runPhase(ctx, good, cfg, ph.run, func() bool { return ph.bit == nil || ph.bit(env.b.Stats()) })
		if err != nil {
			return rep, fmt.Errorf("attack %s: %w", ph.name, err)
		}
		p.Name, p.Note = ph.name, ph.note
		if ph.run == nil {
			idle = p
		}
		p.RatioP50, p.RatioP99 = p.P50Ms/idle.P50Ms, p.P99Ms/idle.P99Ms
		rep.Phases = append(rep.Phases, p)
	}
	rep.Stats, rep.Load = env.b.Stats(), cfg.MachineLoad()
	return rep, nil
}

// runPhase starts attack (nil = none), waits until it has warmed up and
// bitten, and measures the round trips while it runs.
func runPhase(ctx context.Context, good *pinger, cfg AttackConfig, attack func(context.Context) error, bit func() bool) (AttackPhase, error) {
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var attackErr error
	if attack != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := attack(actx); err != nil && actx.Err() == nil {
				attackErr = err
			}
		}()
		if err := waitBitten(ctx, cfg.Warmup, bit); err != nil {
			stop()
			wg.Wait()
			return AttackPhase{}, err
		}
	}
	rtts, err := good.measure(ctx, cfg.RoundTrips)
	stop()
	wg.Wait()
	if err == nil {
		err = attackErr
	}
	if err != nil {
		return AttackPhase{}, err
	}
	slices.Sort(rtts)
	return AttackPhase{P50Ms: ms(rtts[len(rtts)/2]), P99Ms: ms(rtts[len(rtts)*99/100])}, nil
}

// waitBitten waits at least warmup and until bit reports the attack met its
// limit, at most a minute.
func waitBitten(ctx context.Context, warmup time.Duration, bit func() bool) error {
	start := time.Now()
	for time.Since(start) < warmup || !bit() {
		if time.Since(start) > time.Minute {
			return errors.New("the attack met no limit within a minute")
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// attackEnv is the broker and the accounts of Attack.
type attackEnv struct {
	b                     *broker.Broker
	silent                int // silent strangers of the pre-auth flood
	goodSecret, badSecret string
	intgSecret            string
	badKey                ed25519.PrivateKey
}

func startAttackBroker(log *slog.Logger, queueBytes int64) (*attackEnv, error) {
	e := &attackEnv{}
	var err error
	secrets := []*string{&e.goodSecret, &e.badSecret, &e.intgSecret}
	for _, s := range secrets {
		if *s, err = broker.NewSecret(); err != nil {
			return nil, err
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	e.badKey = priv
	table, err := broker.NewTable(
		broker.DeviceAccount("pi-good", broker.HashSecret(e.goodSecret), nil, 1),
		broker.DeviceAccount("pi-bad", broker.HashSecret(e.badSecret), pub, 1),
		broker.IntegrationAccount("stuck", broker.HashSecret(e.intgSecret)),
	)
	if err != nil {
		return nil, err
	}
	e.b, err = broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", MaxQueuedBytes: queueBytes, Logger: log}, table)
	return e, err
}

// pinger is the well-behaved device: it publishes on its own bus and waits
// for the message to come back.
type pinger struct {
	c    *paho.Client
	back chan struct{}
}

func (e *attackEnv) newPinger(ctx context.Context) (*pinger, error) {
	p := &pinger{back: make(chan struct{}, 1)}
	t := Target{Name: "chorus", Addr: e.b.Addr(), Login: func(string, int) (string, string) { return "pi-good", e.goodSecret }}
	c, err := dial(ctx, t, "pub", 0, "pi-good", func(*paho.Publish) { p.back <- struct{}{} })
	if err != nil {
		return nil, err
	}
	p.c = c
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Subscribe(sctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "chorus/v1/pi-good/bus/ping", QoS: 1}}}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pinger) measure(ctx context.Context, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := p.c.Publish(pctx, &paho.Publish{Topic: "chorus/v1/pi-good/bus/ping", QoS: 1, Payload: []byte(`{"type":"ping"}`)})
		if err == nil {
			select {
			case <-p.back:
			case <-pctx.Done():
				err = errors.New("round trip: no delivery within 10 s")
			}
		}
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func (p *pinger) close() { _ = p.c.Disconnect(&paho.Disconnect{}) }

// rawConnect opens a connection and sends a CONNECT; it returns the
// connection once the broker accepted it.
func rawConnect(ctx context.Context, addr, id, user, pass string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 60, ClientIdentifier: id,
			UsernameFlag: true, Username: []byte(user), PasswordFlag: true, Password: []byte(pass)}}
	var buf bytes.Buffer
	if err := pk.ConnectEncode(&buf); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(buf.Bytes()); err != nil {
		conn.Close()
		return nil, err
	}
	ack := make([]byte, 4)
	if _, err := conn.Read(ack); err != nil || ack[0] != 0x20 || ack[3] != 0 {
		conn.Close()
		return nil, fmt.Errorf("connect as %s refused: % x %v", user, ack, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

func publishBytes(topic string, payload []byte, qos byte, id uint16) []byte {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos}, ProtocolVersion: 5,
		TopicName: topic, Payload: payload, PacketID: id}
	var buf bytes.Buffer
	_ = pk.PublishEncode(&buf)
	return buf.Bytes()
}

// skillFlood floods from one skill account: its connection writes QoS 0
// publishes back to back, and a second goroutine keeps asking for more
// connections of the same account.
func (e *attackEnv) skillFlood(ctx context.Context) error {
	user := skillcred.Username("pi-bad", "flood")
	pass := skillcred.Mint(e.badKey, 1, "pi-bad", "flood")
	conn, err := rawConnect(ctx, e.b.Addr(), user, user, pass)
	if err != nil {
		return err
	}
	defer conn.Close()
	go drainConn(conn)
	go func() {
		// Second, third, ... connections of the account, each with an id
		// of its own, held open when the broker takes them.
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for i := 0; ctx.Err() == nil; i++ {
			if c, err := rawConnect(ctx, e.b.Addr(), fmt.Sprintf("%s/more-%d", user, i), user, pass); err == nil {
				held = append(held, c)
			}
		}
	}()
	msg := bytes.Repeat(publishBytes("chorus/v1/pi-bad/bus/flood", []byte(`{"type":"flood"}`), 0, 0), 64)
	for ctx.Err() == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write(msg); err != nil && ctx.Err() == nil && !isTimeout(err) {
			return fmt.Errorf("flood write: %w", err)
		}
	}
	return nil
}

func drainConn(c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// preauthFlood is the review's pre-authentication attack, held for the
// phase: Silent strangers that connect and send nothing (each reconnecting
// 100 ms after the broker closes it: at the connect deadline, or at once
// past the pending-connection cap), and 30 that announce a 10 MiB CONNECT,
// send 64 KiB of it and reconnect 50 ms after being closed.
func (e *attackEnv) preauthFlood(ctx context.Context) error {
	var wg sync.WaitGroup
	half := append([]byte{0x10, 0x80, 0x80, 0x80, 0x05}, make([]byte, 64<<10)...)
	stranger := func(payload []byte, pause time.Duration) {
		defer wg.Done()
		for ctx.Err() == nil {
			conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", e.b.Addr())
			if err == nil {
				if payload != nil {
					_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
					_, _ = conn.Write(payload)
				}
				drainUntil(ctx, conn)
				conn.Close()
			}
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
		}
	}
	for range e.silent {
		wg.Add(1)
		go stranger(nil, 100*time.Millisecond)
	}
	for range 30 {
		wg.Add(1)
		go stranger(half, 50*time.Millisecond)
	}
	wg.Wait()
	return nil
}

// drainUntil reads until the broker closes conn or ctx ends.
func drainUntil(ctx context.Context, conn net.Conn) {
	done := make(chan struct{})
	go func() {
		drainConn(conn)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		conn.Close()
		<-done
	}
}

// stuckSubscriber keeps an integration subscribed to the whole tree without
// reading (reconnecting when the broker cuts it), while pi-bad publishes
// 64 KiB bus messages at its account's rate.
func (e *attackEnv) stuckSubscriber(ctx context.Context) error {
	sub := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: "chorus/v1/#", Qos: 1}}}
	var subBuf bytes.Buffer
	if err := sub.SubscribeEncode(&subBuf); err != nil {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			conn, err := rawConnect(ctx, e.b.Addr(), "stuck", "integration:stuck", e.intgSecret)
			if err != nil {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
				}
				continue
			}
			_, _ = conn.Write(subBuf.Bytes())
			// Never reads; wait for the broker to cut it.
			waitClosed(ctx, conn)
			conn.Close()
		}
	}()
	// As fast as the device's account lets it (its burst, then its rate),
	// reconnecting if the broker closes the connection.
	payload := []byte(`{"type":"big","data":{"x":"` + strings.Repeat("x", 64<<10) + `"}}`)
	for id := uint16(1); ctx.Err() == nil; {
		pub, err := rawConnect(ctx, e.b.Addr(), "pi-bad", "pi-bad", e.badSecret)
		if err != nil {
			continue
		}
		go drainConn(pub)
		for ctx.Err() == nil {
			_ = pub.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := pub.Write(publishBytes("chorus/v1/pi-bad/bus/big", payload, 1, id)); err != nil && !isTimeout(err) {
				break
			}
			if id++; id == 0 {
				id = 1
			}
		}
		pub.Close()
	}
	return nil
}

// waitClosed waits until the broker closes conn or ctx ends. It never
// reads (that would drain the queue the point is to fill): it writes a
// PINGREQ now and then, which fails once the broker has closed.
func waitClosed(ctx context.Context, conn net.Conn) {
	for ctx.Err() == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte{0xC0, 0x00}); err != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
