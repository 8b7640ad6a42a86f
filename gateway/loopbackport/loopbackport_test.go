package loopbackport

import (
	"net"
	"strconv"
	"testing"
)

// Every address is on loopback, below the ephemeral range, bindable, and
// handed out once.
func TestAddr(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr := Addr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		host, p, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("%q: not a loopback address (%v)", addr, err)
		}
		port, _ := strconv.Atoi(p)
		if port < lowest || port >= ephemeralStart() {
			t.Fatalf("%s: outside %d-%d", addr, lowest, ephemeralStart()-1)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("bind %s: %v", addr, err)
		}
		ln.Close()
	}
}
