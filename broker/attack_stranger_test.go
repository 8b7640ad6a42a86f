package broker_test

import (
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// 4. A stranger costs the broker little: a CONNECT announcing 10 MiB is
// refused from its fixed header before any buffer is allocated for it, a
// connection that never completes its CONNECT is closed at the deadline, and
// connections past MaxPendingConnects are closed as they arrive.
func TestAttackPreauthHalfSentConnects(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	heapBefore := heapInUse()
	const n = 30
	conns := make([]*brokertest.Raw, n)
	for i := range conns {
		c := brokertest.DialRaw(t, b.Addr())
		// CONNECT, remaining length 10 MiB, then the first 64 KiB of it.
		c.Write([]byte{0x10, 0x80, 0x80, 0x80, 0x05})
		_, _ = c.Conn.Write(make([]byte, 64<<10))
		conns[i] = c
	}
	for i, c := range conns {
		if !c.ClosedWithin(wait) {
			t.Fatalf("half-sent 10 MiB CONNECT %d left open", i)
		}
	}
	if grew := heapInUse() - heapBefore; grew > 32<<20 {
		t.Fatalf("%d half-sent 10 MiB CONNECTs grew the heap by %d MiB", n, grew>>20)
	}
	if got := b.Stats().PreauthClosed; got < n {
		t.Fatalf("PreauthClosed = %d, want >= %d", got, n)
	}
	// Not a CONNECT first: closed.
	c := brokertest.DialRaw(t, b.Addr())
	c.Write([]byte{0x30, 0x00})
	if !c.ClosedWithin(wait) {
		t.Fatal("a PUBLISH before CONNECT left the connection open")
	}
	brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{}) // still serving
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

func TestAttackPreauthSilentSockets(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	b := brokertest.Start(t, broker.Config{ConnectTimeout: 300 * time.Millisecond, MaxPendingConnects: 20}, dev.Account)
	silent := make([]*brokertest.Raw, 20)
	for i := range silent {
		silent[i] = brokertest.DialRaw(t, b.Addr())
	}
	poll.Until(t, "20 pending connects", wait, func() bool { return b.Stats().PendingConnects == 20 })
	// Past the cap, a connection waits in the kernel's backlog, unserved,
	// until a slot frees: a device's CONNECT sent now is answered only
	// after the silent sockets' deadline.
	start := time.Now()
	late := brokertest.DialRaw(t, b.Addr())
	late.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: dev.Secret, Clean: true})
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("a connection past MaxPendingConnects was served after %s, before any slot was free", waited)
	}
	for i, c := range silent {
		if !c.ClosedWithin(wait) {
			t.Fatalf("silent socket %d open past the connect deadline", i)
		}
	}
	poll.Until(t, "no pending connects", wait, func() bool { return b.Stats().PendingConnects == 0 })
	// An authenticated client is not subject to the connect deadline.
	c := brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{})
	time.Sleep(500 * time.Millisecond) // longer than ConnectTimeout: nothing may close it
	if rc := c.Pub(t, "chorus/v1/pi-a/bus/x", []byte(`{"type":"x"}`), false); rc != 0 {
		t.Fatalf("authenticated client after the connect deadline: %#x", rc)
	}
}

// 5. An accept error (EMFILE when the process is out of descriptors) does
// not end the MQTT listener: it backs off, /healthz says why meanwhile, and
// it accepts again once descriptors are free.
func TestAttackListenerSurvivesEMFILE(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	tight := lim
	tight.Cur = uint64(len(fds) + 8)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &tight); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	defer restore()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// Each check opens one more connection until the listener runs out of
	// descriptors and says so in its health.
	poll.Until(t, "an accept error in the listener's health", wait, func() bool {
		if failing(b) != "" {
			return true
		}
		if c, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
			held = append(held, c)
		}
		return failing(b) != ""
	})
	t.Logf("health while out of descriptors: %s", failing(b))
	for _, c := range held {
		c.Close()
	}
	held = nil
	restore()
	c := brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{})
	c.Close()
	poll.Until(t, "the listener healthy again", wait, func() bool { return failing(b) == "" })
}

func failing(b *broker.Broker) string {
	f := b.Health().Failing()
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
