package wsbus

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// loopbackPeerUID finds the uid owning the other end of a loopback TCP
// connection whose server side is local and client side is remote: the
// socket in /proc/net/tcp or tcp6 whose own address is remote and whose peer
// is local. A peer on another host has no such socket here.
func loopbackPeerUID(local, remote string) (uint32, error) {
	l, err1 := netip.ParseAddrPort(local)
	r, err2 := netip.ParseAddrPort(remote)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("peer address: %w", err)
	}
	if !r.Addr().IsLoopback() {
		return 0, fmt.Errorf("peer %s is not on this host", remote)
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := findSocket(table, r, l)
		if err != nil {
			return 0, err
		}
		if found {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("no socket %s -> %s on this host", remote, local)
}

// findSocket scans one /proc/net table for the socket self -> peer.
func findSocket(table string, self, peer netip.AddrPort) (uint32, bool, error) {
	f, err := os.Open(table)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil // no IPv6
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		a, err1 := procAddr(fields[1])
		b, err2 := procAddr(fields[2])
		if err1 != nil || err2 != nil || !sameEnd(a, self) || !sameEnd(b, peer) {
			continue
		}
		uid, err := strconv.ParseUint(fields[7], 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("%s: uid %q: %w", table, fields[7], err)
		}
		return uint32(uid), true, nil
	}
	return 0, false, sc.Err()
}

// procAddr reads "ADDR:PORT" as the kernel prints it: the address as 32-bit
// words in the host's byte order, the port in hex.
func procAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || len(raw)%4 != 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// sameEnd compares two endpoints, an IPv4 address and its IPv4-mapped IPv6
// form being the same.
func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}
