// Package advertise decides the URLs the gateway hands to other machines (a
// device's credentials, up.json's advertised URLs): the address a listener
// is bound to is not always one a satellite can dial (issue 16, point 1).
//
//   - An explicit address (--advertise-mqtt, --advertise-http or the config
//     keys broker.advertise, http.advertise) is used as given: a full URL
//     (its port, or the scheme's default, not the listener's), or
//     a bare host or host:port that takes the listener's scheme and port.
//   - A listener on a wildcard (0.0.0.0, ::, or no host) advertises the
//     host's first routable address (a global unicast address of an
//     interface that is up, IPv4 first, bridges of containers and VMs last);
//     without one, its host name.
//   - A listener on a specific address advertises that address.
//
// A URL whose host only this machine can reach (loopback, a wildcard,
// localhost) carries a Warning: credentials with it work on this machine
// only. TLS listeners get mqtts:// and https:// (the caller passes the
// scheme it serves).
package advertise

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Iface is one network interface as the host sees it.
type Iface struct {
	Name  string
	Up    bool
	Addrs []netip.Addr
}

// Host is what a default is derived from; the zero value reads this host.
type Host struct {
	Interfaces func() ([]Iface, error)
	Hostname   func() (string, error)
}

// Result is an advertised URL and how it was found.
type Result struct {
	URL     string
	Source  string // "explicit", "listener", "routable address of <iface>", "host name"
	Warning string // non-empty when other machines cannot use URL
}

// Resolve returns the URL to advertise for a listener serving scheme (mqtt,
// mqtts, ws, wss, http, https) bound at bound (host:port, the port as bound).
// explicit, when set, wins; an explicit URL of another family of schemes
// (an http URL for MQTT) is an error that changes nothing.
func Resolve(scheme, bound, explicit string, h Host) (Result, error) {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return Result{}, fmt.Errorf("advertise %s: listener address %q: %w", scheme, bound, err)
	}
	if explicit != "" {
		u, err := explicitURL(scheme, port, explicit)
		if err != nil {
			return Result{}, err
		}
		return Result{URL: u, Source: "explicit", Warning: LocalOnly(u)}, nil
	}
	if !isWildcard(host) {
		u := scheme + "://" + net.JoinHostPort(host, port)
		return Result{URL: u, Source: "listener", Warning: LocalOnly(u)}, nil
	}
	h.setDefaults()
	if name, addr, ok := routable(h); ok {
		u := scheme + "://" + net.JoinHostPort(addr.String(), port)
		return Result{URL: u, Source: "routable address of " + name}, nil
	}
	if name, err := h.Hostname(); err == nil && name != "" && !isLocalName(name) {
		u := scheme + "://" + net.JoinHostPort(name, port)
		return Result{URL: u, Source: "host name"}, nil
	}
	u := scheme + "://" + net.JoinHostPort("127.0.0.1", port)
	return Result{URL: u, Source: "loopback (no routable address, no host name)", Warning: LocalOnly(u)}, nil
}

// schemeFamily is the set of schemes that serve the same protocol.
func schemeFamily(scheme string) []string {
	switch scheme {
	case "http", "https":
		return []string{"http", "https"}
	}
	return []string{"mqtt", "mqtts", "ws", "wss"}
}

// explicitURL turns an explicit address into a URL: a URL of scheme's
// family as given, or a bare host or
// host:port with the listener's scheme and port.
func explicitURL(scheme, port, explicit string) (string, error) {
	family := schemeFamily(scheme)
	if strings.Contains(explicit, "://") {
		u, err := url.Parse(explicit)
		if err != nil {
			return "", fmt.Errorf("advertise %s: %q: %w", scheme, explicit, err)
		}
		ok := false
		for _, s := range family {
			ok = ok || u.Scheme == s
		}
		if !ok || u.Hostname() == "" {
			return "", fmt.Errorf("advertise %s: %q: want %s://host[:port] (one of %s)", scheme, explicit, scheme, strings.Join(family, ", "))
		}
		return u.String(), nil // without a port, the scheme's own (a proxy on 443)
	}
	host, p := explicit, port
	if h, pp, err := net.SplitHostPort(explicit); err == nil {
		host, p = h, pp
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, "/?#@ ") {
		return "", fmt.Errorf("advertise %s: %q: want host, host:port or %s://host:port", scheme, explicit, scheme)
	}
	return scheme + "://" + net.JoinHostPort(host, p), nil
}

// LocalOnly says why a URL is of no use on another machine ("" when it may
// be): its host is a loopback address, a wildcard or localhost. cmd/chorus
// prints it next to credentials written for a device.
func LocalOnly(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	switch {
	case isWildcard(host):
		return fmt.Sprintf("%s names a wildcard address (%q): on another machine it means that machine itself; set --advertise-mqtt/--advertise-http (or broker.advertise/http.advertise) to an address satellites can reach", rawURL, host)
	case isLocalName(host):
		return fmt.Sprintf("%s names a loopback address: only this machine can reach it; listen on a routable address or set --advertise-mqtt/--advertise-http (or broker.advertise/http.advertise)", rawURL)
	}
	return ""
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}

func isLocalName(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// virtual are interface name prefixes of container and VM bridges: their
// addresses are reachable from this host's guests only, so they come last.
var virtual = []string{"docker", "br-", "virbr", "cni", "flannel", "podman", "lxcbr", "vboxnet", "vmnet"}

func isVirtual(name string) bool {
	for _, p := range virtual {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// routable picks the first global unicast address of an interface that is
// up: IPv4 before IPv6, physical before virtual, in the host's order.
func routable(h Host) (string, netip.Addr, bool) {
	ifs, err := h.Interfaces()
	if err != nil {
		return "", netip.Addr{}, false
	}
	for _, pass := range []struct{ v4, virtual bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		for _, i := range ifs {
			if !i.Up || isVirtual(i.Name) != pass.virtual {
				continue
			}
			for _, a := range i.Addrs {
				if a.Is4() == pass.v4 && a.IsGlobalUnicast() && !a.IsLoopback() {
					return i.Name, a, true
				}
			}
		}
	}
	return "", netip.Addr{}, false
}

func (h *Host) setDefaults() {
	if h.Interfaces == nil {
		h.Interfaces = systemInterfaces
	}
	if h.Hostname == nil {
		h.Hostname = os.Hostname
	}
}

func systemInterfaces() ([]Iface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Iface, 0, len(ifs))
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		x := Iface{Name: i.Name, Up: i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				x.Addrs = append(x.Addrs, p.Addr().Unmap())
			}
		}
		out = append(out, x)
	}
	return out, nil
}
