// Package loopbackport gives a test a loopback TCP address that no other
// test is handed while it is free, so a test that frees a port and binds it
// again (a gateway or Mosquitto restarted on the address its first run
// had, a port that must stay unbound so a dial is refused) can run beside
// others (t.Parallel).
//
// A listener on 127.0.0.1:0, and the source port of every outgoing
// connection, comes from the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768-60999 by default). Addr picks below
// that range, where only a program that names its port binds; each address
// is handed out once per process, and the range is large enough (over
// 20,000 ports) that two test processes picking at random at once rarely
// meet, and then only if both free their port in the same moment.
package loopbackport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The ports Addr picks from: from lowest up to the start of the kernel's
// ephemeral range (read from /proc; fallbackEphemeral where it cannot be).
const (
	lowest            = 10000
	fallbackEphemeral = 32768
)

var (
	mu     sync.Mutex       // guards handed
	handed = map[int]bool{} // ports Addr returned in this process
)

// Addr returns "127.0.0.1:PORT" for a port below the ephemeral range that
// was free a moment ago (it bound and closed it) and that this process has
// not handed out before. The caller binds it when it wants; it fails t when
// 100 picks found no free port.
func Addr(t testing.TB) string {
	t.Helper()
	top := ephemeralStart()
	mu.Lock()
	defer mu.Unlock()
	for range 100 {
		port := lowest + rand.IntN(top-lowest)
		if handed[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // someone holds it
		}
		ln.Close()
		handed[port] = true
		return addr
	}
	t.Fatalf("no free loopback port in %d-%d after 100 picks", lowest, top-1)
	return ""
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallbackEphemeral
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return fallbackEphemeral
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= lowest+1000 {
		return fallbackEphemeral
	}
	return n
}
