package bus

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by operations on a closed Client or transport.
var ErrClosed = errors.New("bus: closed")

// ErrNotConnected is returned by a publish of a draining transport that has
// no connection (MQTT.Drain).
var ErrNotConnected = errors.New("bus: not connected to the broker (shutting down)")

// ConnectError is a broker's refusal of CONNECT (CONNACK reason >= 0x80).
type ConnectError struct {
	URL    string // redacted
	Code   byte   // CONNACK reason code
	Reason string // the broker's reason string, if any
}

func (e *ConnectError) Error() string {
	msg := fmt.Sprintf("connect %s: refused by the broker: %s", e.URL, reasonName(e.Code))
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// permanentRefusal reports whether retrying the same CONNECT cannot succeed
// without a change on either side; busy or unavailable brokers are retried.
func permanentRefusal(code byte) bool {
	switch code {
	case 0x88, 0x89, 0x97, 0x9F: // unavailable, busy, quota exceeded, rate exceeded
		return false
	}
	return code >= 0x80
}

// reasonNames are the MQTT 5 reason codes a broker returns in CONNACK,
// SUBACK and PUBACK (MQTT 5 §2.4), as the spec names them.
var reasonNames = map[byte]string{
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x83: "implementation specific error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad username or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8C: "bad authentication method",
	0x8F: "topic filter invalid",
	0x90: "topic name invalid",
	0x91: "packet identifier in use",
	0x95: "packet too large",
	0x97: "quota exceeded",
	0x99: "payload format invalid",
	0x9A: "retain not supported",
	0x9B: "QoS not supported",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9E: "shared subscriptions not supported",
	0x9F: "connection rate exceeded",
	0xA1: "subscription identifiers not supported",
	0xA2: "wildcard subscriptions not supported",
}

func reasonName(code byte) string {
	if n, ok := reasonNames[code]; ok {
		return fmt.Sprintf("%s (0x%02X)", n, code)
	}
	return fmt.Sprintf("reason 0x%02X", code)
}
