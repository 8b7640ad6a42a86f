package brokertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// Raw is a bare MQTT connection that sends exactly the packets a test builds
// (mochi's packets encoders), including those a client library refuses to
// send: forged ids, Wills outside the ACL, half-sent CONNECTs, alias-only
// publishes, MQTT 3.1.1. It acknowledges nothing on its own.
type Raw struct {
	t       testing.TB
	Conn    net.Conn
	r       *bufio.Reader
	Version byte // protocol version used to encode and decode (5 or 4)
}

// DialRaw connects to addr; the connection is closed in t.Cleanup.
func DialRaw(t testing.TB, addr string) *Raw {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &Raw{t: t, Conn: conn, r: bufio.NewReader(conn), Version: 5}
}

// RawConnect is what Raw.Connect sends.
type RawConnect struct {
	ClientID, Username, Password string
	Clean                        bool // clean start / clean session
	Expiry                       uint32
	Will                         *packets.Packet // Topic, Payload, Qos, Retain and WillDelay from TopicName, Payload, FixedHeader
	WillDelay                    uint32
	User                         []packets.UserProperty
	// NoKeepalive asks for keepalive 0 (none) instead of 30 s: a client
	// that stops reading is then cut only by the broker's own policy, never
	// by its keepalive, however long a loaded machine takes.
	NoKeepalive bool
}

// Connect sends a CONNECT and returns the CONNACK (or the error reading it).
func (c *Raw) Connect(o RawConnect) (packets.Packet, error) {
	c.t.Helper()
	c.Write(c.Encode(ConnectPacket(o)))
	return c.Next(5 * time.Second)
}

// ConnectPacket builds the CONNECT that Connect sends.
func ConnectPacket(o RawConnect) packets.Packet {
	keepalive := uint16(30)
	if o.NoKeepalive {
		keepalive = 0
	}
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{
			ProtocolName: []byte("MQTT"), Clean: o.Clean, Keepalive: keepalive, ClientIdentifier: o.ClientID,
			UsernameFlag: o.Username != "", Username: []byte(o.Username),
			PasswordFlag: o.Password != "", Password: []byte(o.Password),
		},
		Properties: packets.Properties{SessionExpiryInterval: o.Expiry, SessionExpiryIntervalFlag: o.Expiry > 0, User: o.User},
	}
	if w := o.Will; w != nil {
		pk.Connect.WillFlag = true
		pk.Connect.WillTopic = w.TopicName
		pk.Connect.WillPayload = w.Payload
		pk.Connect.WillQos = w.FixedHeader.Qos
		pk.Connect.WillRetain = w.FixedHeader.Retain
		pk.Connect.WillProperties.WillDelayInterval = o.WillDelay
	}
	return pk
}

// MustConnect is Connect that fails the test unless the CONNACK accepts.
func (c *Raw) MustConnect(o RawConnect) packets.Packet {
	c.t.Helper()
	ack, err := c.Connect(o)
	if err != nil || ack.FixedHeader.Type != packets.Connack || ack.ReasonCode != 0 {
		c.t.Fatalf("raw connect as %q (id %q): %v, CONNACK %+v", o.Username, o.ClientID, err, ack)
	}
	return ack
}

// Send encodes pk at the connection's protocol version and writes it.
func (c *Raw) Send(pk packets.Packet) {
	c.t.Helper()
	c.Write(c.Encode(pk))
}

// Encode encodes pk at the connection's protocol version.
func (c *Raw) Encode(pk packets.Packet) []byte {
	c.t.Helper()
	pk.ProtocolVersion = c.Version
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Pubrec:
		err = pk.PubrecEncode(&buf)
	case packets.Pubrel:
		err = pk.PubrelEncode(&buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	default:
		err = fmt.Errorf("raw: cannot send packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return buf.Bytes()
}

// Write sends bytes as they are.
func (c *Raw) Write(b []byte) {
	c.t.Helper()
	if _, err := c.Conn.Write(b); err != nil {
		c.t.Fatalf("raw write: %v", err)
	}
}

// Publish sends a PUBLISH.
func (c *Raw) Publish(topic string, payload []byte, qos byte, id uint16, props packets.Properties) {
	c.t.Helper()
	c.Send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
		TopicName:   topic, Payload: payload, PacketID: id, Properties: props,
	})
}

// Subscribe sends a SUBSCRIBE and returns the SUBACK's reason codes.
func (c *Raw) Subscribe(id uint16, filters ...string) []byte {
	c.t.Helper()
	subs := packets.Subscriptions{}
	for _, f := range filters {
		subs = append(subs, packets.Subscription{Filter: f, Qos: 1})
	}
	c.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: id, Filters: subs})
	ack := c.Expect(packets.Suback, 5*time.Second)
	return ack.ReasonCodes
}

// Expect reads packets until one of type typ arrives, skipping others, and
// fails the test after d.
func (c *Raw) Expect(typ byte, d time.Duration) packets.Packet {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		pk, err := c.Next(time.Until(deadline))
		if err != nil {
			c.t.Fatalf("raw: waiting for packet type %d: %v", typ, err)
		}
		if pk.FixedHeader.Type == typ {
			return pk
		}
	}
}

// ErrClosed is returned by Next when the broker closed the connection.
var ErrClosed = errors.New("raw: connection closed by the broker")

// Next reads and decodes one packet within d.
func (c *Raw) Next(d time.Duration) (packets.Packet, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(d))
	b0, err := c.r.ReadByte()
	if err != nil {
		return packets.Packet{}, closedOr(err)
	}
	var pk packets.Packet
	if err := pk.FixedHeader.Decode(b0); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(c.r)
	if err != nil {
		return pk, closedOr(err)
	}
	pk.FixedHeader.Remaining = n
	pk.ProtocolVersion = c.Version
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return pk, closedOr(err)
	}
	return pk, decode(&pk, body)
}

func closedOr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return ErrClosed
	}
	var ne *net.OpError
	if errors.As(err, &ne) && !ne.Timeout() {
		return ErrClosed // connection reset
	}
	return err
}

func decode(pk *packets.Packet, body []byte) error {
	switch pk.FixedHeader.Type {
	case packets.Connack:
		return pk.ConnackDecode(body)
	case packets.Publish:
		return pk.PublishDecode(body)
	case packets.Puback:
		return pk.PubackDecode(body)
	case packets.Pubrec:
		return pk.PubrecDecode(body)
	case packets.Pubrel:
		return pk.PubrelDecode(body)
	case packets.Pubcomp:
		return pk.PubcompDecode(body)
	case packets.Suback:
		return pk.SubackDecode(body)
	case packets.Unsuback:
		return pk.UnsubackDecode(body)
	case packets.Disconnect:
		return pk.DisconnectDecode(body)
	case packets.Pingresp:
		return nil
	}
	return fmt.Errorf("raw: unexpected packet type %d", pk.FixedHeader.Type)
}

// ClosedWithin reports whether the broker closes the connection within d
// (packets it sends meanwhile are read and dropped).
func (c *Raw) ClosedWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := c.Next(time.Until(deadline)); errors.Is(err, ErrClosed) {
			return true
		} else if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false
			}
		}
	}
	return false
}
