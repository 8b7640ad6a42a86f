package broker

import (
	"bytes"
	"log/slog"
	"sync"
	"sync/atomic"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mochi-mqtt/server/v2/system"
)

// policy is the auth and ACL hook. It decides from the current *Table alone:
// nothing on the packet path does I/O (STYLE.md §8). Inline (in-process)
// publishes skip mochi's ACL check; the components that use them enforce their
// own policy.
type policy struct {
	mqtt.HookBase
	table     atomic.Pointer[Table]
	cfg       *Config
	maxExpiry uint32
	log       *slog.Logger

	limits         limiter      // per-client publish rate (ratelimit.go)
	payloadRefused atomic.Int64 // publishes refused by a payload limit (limits.go)

	// mu guards sessions: the credentials each connected client proved, kept
	// so a replaced table can re-check them and disconnect those that vanished.
	mu       sync.Mutex
	sessions map[*mqtt.Client][]byte
}

func newPolicy(t *Table, cfg *Config) *policy {
	p := &policy{cfg: cfg, maxExpiry: uint32(cfg.MaxMessageExpiry), log: cfg.Logger, sessions: make(map[*mqtt.Client][]byte)}
	p.limits.cfg = cfg
	p.table.Store(t)
	return p
}

func (p *policy) ID() string { return "chorus-policy" }

func (p *policy) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish, mqtt.OnDisconnect, mqtt.OnSysInfoTick,
	}, []byte{b})
}

// OnConnectAuthenticate accepts a client whose credentials the table proves and
// whose Will, if any, it would be allowed to publish, and gives it a publish
// rate bucket for its role.
func (p *policy) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	a, err := p.table.Load().Authenticate(string(pk.Connect.Username), pk.Connect.Password)
	if err != nil {
		p.log.Info("mqtt connect refused", "client", cl.ID, "username", string(pk.Connect.Username), "remote", cl.Net.Remote)
		return false
	}
	if pk.Connect.WillFlag && !willAllowed(a, pk.Connect.WillTopic, pk.Connect.WillRetain) {
		p.log.Info("mqtt connect refused: will topic not allowed", "client", cl.ID, "username", a.Username, "topic", pk.Connect.WillTopic)
		return false
	}
	// mochi publishes a Will without calling OnPublish, so its payload
	// meets the topic's limits here or never.
	if pk.Connect.WillFlag {
		if why := p.cfg.payloadAllowed(a.Role, pk.Connect.WillTopic, pk.Connect.WillPayload); why != "" {
			p.log.Info("mqtt connect refused: will "+why, "client", cl.ID, "username", a.Username, "topic", pk.Connect.WillTopic)
			return false
		}
	}
	p.limits.add(cl, a.Role)
	p.mu.Lock()
	p.sessions[cl] = bytes.Clone(pk.Connect.Password)
	p.mu.Unlock()
	return true
}

func willAllowed(a *Account, topic string, retain bool) bool {
	return coveredBy(a.Publish, topic) && (!retain || coveredBy(a.Retain, topic))
}

// OnACLCheck decides a publish (write) or a subscription and each delivery (read).
func (p *policy) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	if !ok {
		return false
	}
	if write {
		return coveredBy(a.Publish, topic) && !typeDenied(a, topic)
	}
	return coveredBy(a.Subscribe, topic)
}

// OnPublish refuses publishes over the client's rate, payloads over their
// topic's limits, forged skill ids and retained publishes outside the
// account's retain filters, and caps the expiry of non-retained messages.
// Retained state never gets an expiry from the broker: device state must
// outlive any disconnect. The checks run cheapest first, so a flooder is
// stopped by its bucket before any payload is read.
func (p *policy) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline {
		return pk, nil
	}
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	if !ok {
		return pk, refusal(cl, pk)
	}
	if ok, first := p.limits.allow(cl); !ok {
		if first {
			p.log.Info("publish rate limit reached; further refusals are only counted", "client", cl.ID, "username", a.Username)
		}
		return pk, refusalCode(cl, pk, packets.ErrQuotaExceeded)
	}
	if why := p.cfg.payloadAllowed(a.Role, pk.TopicName, pk.Payload); why != "" {
		p.payloadRefused.Add(1)
		p.log.Info("publish refused: "+why, "client", cl.ID, "topic", pk.TopicName, "bytes", len(pk.Payload))
		return pk, refusalCode(cl, pk, packets.ErrPayloadFormatInvalid)
	}
	if forgedSkillID(a, pk.TopicName, pk.Payload) {
		p.log.Info("bus message with a forged context.skill_id refused", "client", cl.ID, "topic", pk.TopicName)
		return pk, refusal(cl, pk)
	}
	if pk.FixedHeader.Retain {
		if !coveredBy(a.Retain, pk.TopicName) {
			p.log.Info("retained publish refused", "client", cl.ID, "topic", pk.TopicName)
			return pk, refusal(cl, pk)
		}
		ownStrings(&pk)
		return pk, nil
	}
	if e := pk.Properties.MessageExpiryInterval; p.maxExpiry > 0 && (e == 0 || e > p.maxExpiry) {
		pk.Properties.MessageExpiryInterval = p.maxExpiry
		pk.Expiry = pk.Created + int64(p.maxExpiry)
	}
	return pk, nil
}

// refusal is the error that makes mochi refuse pk without delivering it: an
// MQTT 5 QoS>0 publisher gets PUBACK "not authorized" (0x87); anything else is
// dropped, because mochi delivers a packet whose hook returned any other error.
func refusal(cl *mqtt.Client, pk packets.Packet) error {
	return refusalCode(cl, pk, packets.ErrNotAuthorized)
}

// refusalCode is refusal with another PUBACK reason. Only the codes MQTT 5
// allows in a PUBACK are used [MQTT-3.4.2.1]: 0x97 "quota exceeded" for the
// rate limit (0x96 "message rate too high" exists only for DISCONNECT, and
// a strict client treats it in a PUBACK as a protocol error), 0x99 "payload
// format invalid" for the payload limits.
func refusalCode(cl *mqtt.Client, pk packets.Packet, code packets.Code) error {
	if cl.Properties.ProtocolVersion == 5 && pk.FixedHeader.Qos > 0 {
		return code
	}
	return packets.ErrRejectPacket
}

func (p *policy) OnDisconnect(cl *mqtt.Client, _ error, _ bool) {
	if n := p.limits.remove(cl); n > 0 {
		p.log.Info("client was rate limited", "client", cl.ID, "username", string(cl.Properties.Username), "refused", n)
	}
	p.mu.Lock()
	delete(p.sessions, cl)
	p.mu.Unlock()
}

// OnSysInfoTick runs on mochi's event loop every SysTopicResendInterval and
// drops the state of clients that closed without an OnDisconnect (mochi skips
// it when a client fails between authentication and the end of its CONNACK).
func (p *policy) OnSysInfoTick(*system.Info) {
	p.limits.sweep()
	p.mu.Lock()
	for cl := range p.sessions {
		if cl.Closed() {
			delete(p.sessions, cl)
		}
	}
	p.mu.Unlock()
}

// replace swaps the table and returns the clients whose credentials no longer
// authenticate; the caller disconnects them outside the lock.
func (p *policy) replace(t *Table) []*mqtt.Client {
	p.table.Store(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	var gone []*mqtt.Client
	for cl, pw := range p.sessions {
		if _, err := t.Authenticate(string(cl.Properties.Username), pw); err != nil {
			gone = append(gone, cl)
			delete(p.sessions, cl)
		}
	}
	return gone
}
