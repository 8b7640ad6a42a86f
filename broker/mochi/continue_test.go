package mqtt

import (
	"bytes"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/stretchr/testify/require"
)

// continuations runs the reads a connection hands on (ReadContinuer) as an
// embedder's listener does: each on a goroutine of its own, counted in wg,
// under a recover that keeps the panic (Chorus logs it and closes the
// connection).
type continuations struct {
	wg      sync.WaitGroup
	started atomic.Int64
	mu      sync.Mutex
	panics  []any
}

func (k *continuations) run(read func() error) {
	defer k.wg.Done()
	defer k.recover()
	_ = read()
}

func (k *continuations) recover() {
	if p := recover(); p != nil {
		k.mu.Lock()
		k.panics = append(k.panics, p)
		k.mu.Unlock()
	}
}

func (k *continuations) panicked() []any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]any(nil), k.panics...)
}

// continuingConn is a connection whose reads go on on k's goroutines.
type continuingConn struct {
	net.Conn
	k *continuations
}

func (c *continuingConn) ContinueReads(read func() error) bool {
	c.k.wg.Add(1)
	c.k.started.Add(1)
	go c.k.run(read)
	return true
}

// serveContinuing is serveLoopback with each connection a continuingConn:
// it returns the dialer and the continuations, all of which have returned
// at the test's end (after the connections are closed). established counts
// the EstablishConnection calls that returned ErrReadsContinued.
func serveContinuing(t *testing.T, s *Server) (dial func() net.Conn, k *continuations, established *atomic.Int64) {
	t.Helper()
	k = new(continuations)
	established = new(atomic.Int64)
	t.Cleanup(k.wg.Wait) // runs after serveLoopbackWith's cleanup has closed the connections
	dial = serveLoopbackWith(t, func(c net.Conn) {
		if s.EstablishConnection("t", &continuingConn{Conn: c, k: k}) == ErrReadsContinued {
			established.Add(1)
		}
	})
	return dial, k, established
}

// TestIdleContinuedConnectionsKeep2KiBStacks: clients whose connections are
// ReadContinuers connect, subscribe and publish to themselves (a handshake
// and packets through the hooks, which grow a goroutine's stack to 4–8 KiB),
// and once idle each waits for its next packet on a goroutine that has
// handled none: about 2 KiB of stack each, the size a goroutine starts with
// (ReadContinuer). On one goroutine per connection the same clients keep
// 4 KiB or more after any number of collections (TestIdleConnectionStacksShrink,
// and Chorus's TestIdleDeviceStacksShrink before the hand-off).
func TestIdleContinuedConnectionsKeep2KiBStacks(t *testing.T) {
	const clients = 200
	s := New(&Options{Logger: logger})
	require.NoError(t, s.AddHook(new(AllowHook), nil))
	require.NoError(t, s.Serve())
	t.Cleanup(func() { _ = s.Close() })
	dial, k, established := serveContinuing(t, s)

	before := stackBytes()
	for i := 0; i < clients; i++ {
		exerciseClient(t, dial(), "c"+strconv.Itoa(i))
	}
	require.Eventually(t, func() bool { return established.Load() == clients }, 10*time.Second, time.Millisecond,
		"every EstablishConnection returned ErrReadsContinued")
	require.GreaterOrEqual(t, k.started.Load(), int64(3*clients), "reads handed on after the CONNECT, the SUBSCRIBE and the PUBLISH")

	var perClient int64
	for i := 0; i < 3; i++ {
		runtime.GC()
		perClient = (stackBytes() - before) / clients
		t.Logf("after collection %d: %d stack bytes per connection", i+1, perClient)
	}
	limit := int64(2560) // 2 KiB stacks and the noise; 4 KiB and more on one goroutine
	if raceDetector {
		limit = 5 << 10 // instrumented frames: the wait path needs 4 KiB; 8 KiB on one goroutine
	}
	require.LessOrEqualf(t, perClient, limit, "goroutine stack bytes per idle connection waiting on a fresh goroutine")
}

// endHook counts, per client, the Wills sent and the disconnects, and
// panics reading a PUBLISH to the topic "panic".
type endHook struct {
	HookBase
	mu          sync.Mutex
	wills       map[string]int
	disconnects map[string]int
}

func newEndHook() *endHook {
	return &endHook{wills: map[string]int{}, disconnects: map[string]int{}}
}

func (h *endHook) ID() string { return "end" }
func (h *endHook) Provides(b byte) bool {
	return bytes.Contains([]byte{OnConnectAuthenticate, OnACLCheck, OnWillSent, OnDisconnect, OnPacketRead}, []byte{b})
}
func (h *endHook) OnConnectAuthenticate(cl *Client, pk packets.Packet) bool { return true }
func (h *endHook) OnACLCheck(cl *Client, topic string, write bool) bool     { return true }
func (h *endHook) OnPacketRead(cl *Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type == packets.Publish && pk.TopicName == "panic" {
		panic("reading a publish to panic")
	}
	return pk, nil
}
func (h *endHook) OnWillSent(cl *Client, pk packets.Packet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wills[cl.ID]++
}
func (h *endHook) OnDisconnect(cl *Client, err error, expire bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.disconnects[cl.ID]++
}

func (h *endHook) counts(id string) (wills, disconnects int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wills[id], h.disconnects[id]
}

// newEndServer starts a server with an endHook and a listener "t" (a mock:
// serveContinuing accepts its connections), whose clients Close disconnects.
func newEndServer(t *testing.T) (*Server, *endHook) {
	t.Helper()
	s := New(&Options{Logger: logger})
	h := newEndHook()
	require.NoError(t, s.AddHook(h, nil))
	require.NoError(t, s.AddListener(listeners.NewMockListener("t", ":0")))
	require.NoError(t, s.Serve())
	return s, h
}

// connectWithWill connects as id with a Will and has one PINGREQ answered,
// so that the connection is idle on a goroutine its continuations started.
func connectWithWill(t *testing.T, c net.Conn, id string) {
	t.Helper()
	exchange(t, c, id, []packets.Packet{
		{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 4,
			Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 60, ClientIdentifier: id,
				WillFlag: true, WillTopic: "will/" + id, WillPayload: []byte("gone")}},
		{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}, ProtocolVersion: 4},
	}, []byte{packets.Connack, packets.Pingresp})
}

// closeWithin closes s and fails the test if Close has not returned within
// 10 s: it waits for every client's reads to end (Listeners.ClientsWg).
func closeWithin(t *testing.T, s *Server) {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		_ = s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Server.Close has not returned after 10 s: a connection's end did not run")
	}
}

// TestContinuedConnectionEndsOnce: a connection whose reads went on on
// other goroutines ends once, on the last of them, whether the client goes
// (a) or the server closes (b): one Will, one disconnect hook, the client
// uncounted and removed, and Server.Close returns (ClientsWg is done once:
// a second Done would panic).
func TestContinuedConnectionEndsOnce(t *testing.T) {
	s, h := newEndServer(t)
	dial, k, _ := serveContinuing(t, s)

	a, b := dial(), dial()
	connectWithWill(t, a, "a")
	connectWithWill(t, b, "b")
	require.GreaterOrEqual(t, k.started.Load(), int64(4), "reads handed on after each CONNECT and PINGREQ")

	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { _, d := h.counts("a"); return d == 1 }, 10*time.Second, time.Millisecond,
		"the disconnect hook ran for a")
	_, ok := s.Clients.Get("a")
	require.False(t, ok, "a's clean session removed")

	closeWithin(t, s)
	k.wg.Wait()
	for _, id := range []string{"a", "b"} {
		wills, disconnects := h.counts(id)
		require.Equalf(t, 1, wills, "%s: Wills sent", id)
		require.Equalf(t, 1, disconnects, "%s: disconnect hooks", id)
	}
	require.Zero(t, atomic.LoadInt64(&s.Info.ClientsConnected), "clients connected")
	require.Empty(t, k.panicked())
}

// TestPanicOnContinuedReadsEndsTheConnectionOnce: a panic handling a packet
// on a goroutine the connection's reads were handed to unwinds through the
// connection's end, as a panic under EstablishConnection does (the client
// stopped and its socket closed, uncounted, ClientsWg done; the detach, with
// the Will and the disconnect hook, is skipped as in v2.7.9), and reaches
// that goroutine's recover once. The server goes on serving.
func TestPanicOnContinuedReadsEndsTheConnectionOnce(t *testing.T) {
	s, h := newEndServer(t)
	dial, k, _ := serveContinuing(t, s)

	c := dial()
	connectWithWill(t, c, "p")
	exchange(t, c, "p", []packets.Packet{
		{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 4, TopicName: "panic", Payload: []byte("x")},
	}, []byte{0})
	_, err := readPacketType(c)
	require.Error(t, err, "the connection is closed after the panic")
	require.Eventually(t, func() bool { return len(k.panicked()) == 1 }, 10*time.Second, time.Millisecond,
		"the panic reached the continuation's recover")
	require.Eventually(t, func() bool { return atomic.LoadInt64(&s.Info.ClientsConnected) == 0 }, 10*time.Second, time.Millisecond,
		"the client uncounted")

	connectWithWill(t, dial(), "after") // the server goes on

	closeWithin(t, s)
	k.wg.Wait()
	require.Len(t, k.panicked(), 1)
	wills, disconnects := h.counts("p")
	require.Zero(t, wills, "Wills sent after the panic (the detach is skipped, as in v2.7.9)")
	require.Zero(t, disconnects, "disconnect hooks after the panic (as in v2.7.9)")
}
