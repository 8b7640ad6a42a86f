package topic

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultHAPrefix is Home Assistant's default discovery prefix.
const DefaultHAPrefix = "homeassistant"

// ErrBadEscape matches every HAUnescape error.
var ErrBadEscape = errors.New("bad Home Assistant escape")

// HADiscovery is <prefix>/device/chorus_<HAEscape(dev)>/config, the Home
// Assistant device-based discovery topic for dev (ARCHITECTURE.md §3).
func HADiscovery(prefix, dev string) (string, error) {
	if err := validPrefix(prefix); err != nil {
		return "", fmt.Errorf("discovery topic for %q: %w", dev, err)
	}
	if err := ValidDeviceID(dev); err != nil {
		return "", fmt.Errorf("discovery topic: %w", err)
	}
	return prefix + "/device/chorus_" + HAEscape(dev) + "/config", nil
}

// HAGatewayDiscovery is <prefix>/device/chorus_gateway/config, the Home
// Assistant device-based discovery topic of the gateway itself. No device's
// HADiscovery topic can equal it: "gateway" is reserved and HAEscape is
// injective.
func HAGatewayDiscovery(prefix string) (string, error) {
	if err := validPrefix(prefix); err != nil {
		return "", fmt.Errorf("gateway discovery topic: %w", err)
	}
	return prefix + "/device/chorus_" + ReservedDevice + "/config", nil
}

// HAStatus is <prefix>/status, where Home Assistant announces its birth.
func HAStatus(prefix string) (string, error) {
	if err := validPrefix(prefix); err != nil {
		return "", fmt.Errorf("status topic: %w", err)
	}
	return prefix + "/status", nil
}

// validPrefix: a topic name without empty levels at either end.
func validPrefix(prefix string) error {
	if err := ValidName(prefix); err != nil {
		return fmt.Errorf("discovery prefix: %w", err)
	}
	if prefix[0] == '/' || prefix[len(prefix)-1] == '/' {
		return fmt.Errorf("discovery prefix %q: must not begin or end with '/'", prefix)
	}
	return nil
}

// HAEscape maps any string injectively into [a-zA-Z0-9_-], the only
// characters Home Assistant accepts in a discovery object id: letters,
// digits and '-' are kept, '_' becomes "__", '.' becomes "_d", and any other
// byte becomes "_x" and two lowercase hex digits (ids never need this).
// HAUnescape inverts it.
func HAEscape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case haPlain(c):
			b.WriteByte(c)
		case c == '_':
			b.WriteString("__")
		case c == '.':
			b.WriteString("_d")
		default:
			b.WriteString("_x")
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

// HAUnescape inverts HAEscape. It refuses any string HAEscape cannot
// produce, so HAEscape(HAUnescape(s)) == s whenever the error is nil.
func HAUnescape(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case haPlain(c):
			b.WriteByte(c)
		case c != '_':
			return "", fmt.Errorf("unescape %q: byte %q at %d: %w", s, c, i, ErrBadEscape)
		case i+1 < len(s) && s[i+1] == '_':
			b.WriteByte('_')
			i++
		case i+1 < len(s) && s[i+1] == 'd':
			b.WriteByte('.')
			i++
		case i+3 < len(s) && s[i+1] == 'x' && isLowerHex(s[i+2]) && isLowerHex(s[i+3]):
			b.WriteByte(unhex(s[i+2])<<4 | unhex(s[i+3]))
			i += 3
		default:
			return "", fmt.Errorf("unescape %q: bad escape at %d: %w", s, i, ErrBadEscape)
		}
	}
	return b.String(), nil
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if !haPlain(s[i]) {
			return true
		}
	}
	return false
}

func haPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
