package advertise_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/advertise"
)

func host(name string, ifs ...advertise.Iface) advertise.Host {
	return advertise.Host{
		Interfaces: func() ([]advertise.Iface, error) { return ifs, nil },
		Hostname:   func() (string, error) { return name, nil },
	}
}

func iface(name string, up bool, addrs ...string) advertise.Iface {
	i := advertise.Iface{Name: name, Up: up}
	for _, a := range addrs {
		i.Addrs = append(i.Addrs, netip.MustParseAddr(a))
	}
	return i
}

func TestResolve(t *testing.T) {
	lan := host("pi-gw",
		iface("docker0", true, "172.17.0.1"),
		iface("wlan0", false, "10.0.0.9"),
		iface("eth0", true, "fe80::1", "2001:db8::5", "192.168.1.20"),
	)
	cases := []struct {
		name, scheme, bound, explicit string
		h                             advertise.Host
		want, source                  string
		warn                          bool
	}{
		{"ipv4 wildcard takes the routable address", "mqtt", "0.0.0.0:1883", "", lan, "mqtt://192.168.1.20:1883", "routable address of eth0", false},
		{"ipv6 wildcard too", "https", "[::]:8443", "", lan, "https://192.168.1.20:8443", "routable address of eth0", false},
		{"ipv6 only host", "mqtts", "[::]:8883", "", host("x", iface("eth0", true, "fe80::1", "2001:db8::5")), "mqtts://[2001:db8::5]:8883", "routable address of eth0", false},
		{"container bridge only as a last resort", "mqtt", ":1883", "", host("x", iface("docker0", true, "172.17.0.1")), "mqtt://172.17.0.1:1883", "routable address of docker0", false},
		{"no routable address: the host name", "http", "0.0.0.0:8080", "", host("pi-gw", iface("eth0", true, "169.254.3.3")), "http://pi-gw:8080", "host name", false},
		{"nothing at all: loopback, with a warning", "http", "0.0.0.0:8080", "", host("localhost"), "http://127.0.0.1:8080", "loopback (no routable address, no host name)", true},
		{"a specific address is kept", "mqtt", "198.18.0.1:1883", "", lan, "mqtt://198.18.0.1:1883", "listener", false},
		{"loopback listener warns", "mqtt", "127.0.0.1:1883", "", lan, "mqtt://127.0.0.1:1883", "listener", true},
		{"explicit host takes scheme and port", "mqtts", "0.0.0.0:8883", "gw.lan", lan, "mqtts://gw.lan:8883", "explicit", false},
		{"explicit host:port", "mqtt", "0.0.0.0:1883", "gw.lan:11883", lan, "mqtt://gw.lan:11883", "explicit", false},
		{"explicit URL as given", "mqtt", "0.0.0.0:1883", "wss://gw.example/mqtt", lan, "wss://gw.example/mqtt", "explicit", false},
		{"explicit URL with port", "http", "0.0.0.0:8080", "https://gw.example:443", lan, "https://gw.example:443", "explicit", false},
		{"explicit loopback warns", "http", "0.0.0.0:8080", "localhost", lan, "http://localhost:8080", "explicit", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := advertise.Resolve(c.scheme, c.bound, c.explicit, c.h)
			if err != nil {
				t.Fatal(err)
			}
			if r.URL != c.want || r.Source != c.source {
				t.Fatalf("Resolve = %q (%s), want %q (%s)", r.URL, r.Source, c.want, c.source)
			}
			if (r.Warning != "") != c.warn {
				t.Fatalf("warning %q, want one: %v", r.Warning, c.warn)
			}
		})
	}
}

func TestResolveRefusesWhatCannotBeAURL(t *testing.T) {
	for _, c := range []struct{ scheme, explicit, want string }{
		{"mqtt", "http://gw:8080", "want mqtt://host[:port]"},
		{"http", "mqtt://gw:1883", "want http://host[:port]"},
		{"mqtt", "gw:notaport", "want host, host:port"},
		{"mqtt", "gw:70000", "want host, host:port"},
		{"http", "mqtt://", "want http://host"},
	} {
		_, err := advertise.Resolve(c.scheme, "0.0.0.0:1", c.explicit, host("x"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%s, %q) = %v, want an error saying %q", c.scheme, c.explicit, err, c.want)
		}
	}
	if _, err := advertise.Resolve("mqtt", "nonsense", "", host("x")); err == nil {
		t.Error("a listener address without a port was accepted")
	}
}

func TestInterfaceErrorFallsBackToTheHostName(t *testing.T) {
	h := advertise.Host{
		Interfaces: func() ([]advertise.Iface, error) { return nil, errors.New("no netlink") },
		Hostname:   func() (string, error) { return "gw", nil },
	}
	r, err := advertise.Resolve("mqtt", "[::]:1883", "", h)
	if err != nil || r.URL != "mqtt://gw:1883" {
		t.Fatalf("Resolve = %+v, %v", r, err)
	}
}

func TestLocalOnly(t *testing.T) {
	for u, local := range map[string]bool{
		"mqtt://[::]:1883": true, "http://0.0.0.0:8080": true, "mqtt://127.0.0.1:1883": true,
		"http://[::1]:8080": true, "http://localhost:8080": true, "mqtt://pi.localhost:1": true,
		"mqtt://192.168.1.2:1883": false, "https://gw.example": false, "mqtts://[2001:db8::1]:8883": false,
	} {
		if got := advertise.LocalOnly(u) != ""; got != local {
			t.Errorf("LocalOnly(%q) = %v, want %v", u, got, local)
		}
	}
	if w := advertise.LocalOnly("mqtt://[::]:1883"); !strings.Contains(w, "--advertise-mqtt") {
		t.Errorf("the warning does not name the fix: %q", w)
	}
}

func TestTheSystemHostResolves(t *testing.T) {
	r, err := advertise.Resolve("mqtt", "0.0.0.0:1883", "", advertise.Host{})
	if err != nil || !strings.HasPrefix(r.URL, "mqtt://") || strings.Contains(r.URL, "0.0.0.0") {
		t.Fatalf("Resolve on this host = %+v, %v", r, err)
	}
}
