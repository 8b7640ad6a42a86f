package connectivity

import (
	"fmt"
	"net"
)

// Interface is what the network monitor needs to know about one network
// interface.
type Interface struct {
	Name     string
	Up       bool
	Loopback bool
	Addrs    []string // addresses in CIDR form, e.g. "192.168.1.20/24"
}

// SystemInterfaces lists the host's interfaces (net.Interfaces). It is the
// default lister of Config.Interfaces.
func SystemInterfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	out := make([]Interface, 0, len(ifs))
	for _, ifc := range ifs {
		i := Interface{Name: ifc.Name, Up: ifc.Flags&net.FlagUp != 0, Loopback: ifc.Flags&net.FlagLoopback != 0}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue // vanished or unreadable: it cannot carry traffic we can see
		}
		for _, a := range addrs {
			i.Addrs = append(i.Addrs, a.String())
		}
		out = append(out, i)
	}
	return out, nil
}

// NetworkUp reports whether some interface is up with a usable non-loopback
// address (neither loopback nor IPv6 link-local: a link-local address alone
// is what an interface has with no network behind it). The string names the
// interface, or says why there is none.
func NetworkUp(ifs []Interface) (bool, string) {
	for _, i := range ifs {
		if !i.Up || i.Loopback {
			continue
		}
		for _, a := range i.Addrs {
			if usable(a) {
				return true, i.Name
			}
		}
	}
	return false, "no interface up with a non-loopback address"
}

func usable(addr string) bool {
	ip, _, err := net.ParseCIDR(addr)
	if err != nil {
		ip = net.ParseIP(addr)
	}
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return false
	}
	return !(ip.To4() == nil && ip.IsLinkLocalUnicast())
}
