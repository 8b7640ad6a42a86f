package broker

import (
	"log/slog"
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// refusal says why the policy refuses a message: the reason code the
// protocol carries (with the reason in its reason string), and the counter
// it adds to.
type refusal struct {
	code  packets.Code
	why   string
	count func(*counters)
}

func refused(code packets.Code, why string, count func(*counters)) *refusal {
	return &refusal{code: code, why: why, count: count}
}

func countACL(c *counters)     { c.publishesRefused.Add(1) }
func countPayload(c *counters) { c.payloadRefused.Add(1) }

// check decides whether account a may make the broker carry payload on
// topic (retained if retain): the one policy for publishes and Wills. The
// checks run cheapest first. nil means allowed.
func (p *policy) check(a *Account, topic string, payload []byte, retain bool) *refusal {
	switch {
	case len(topic) > p.cfg.MaxTopicLength:
		return refused(packets.ErrTopicNameInvalid, "topic longer than the broker's limit", countACL)
	case !coveredBy(a.Publish, topic):
		return refused(packets.ErrNotAuthorized, "not authorized to publish to this topic", countACL)
	case typeDenied(a, topic):
		return refused(packets.ErrNotAuthorized, "this message type is reserved to the device (a skill needs a grant: chorus fleet grant)", countACL)
	case retain && !coveredBy(a.Retain, topic):
		return refused(packets.ErrNotAuthorized, "retained publishes are not allowed on this topic", countACL)
	}
	if why := p.cfg.payloadAllowed(a.Role, topic, payload); why != "" {
		return refused(packets.ErrPayloadFormatInvalid, why, countPayload)
	}
	if a.Role == RoleSkill {
		return checkSkillEnvelope(a, topic, payload)
	}
	return nil
}

// checkSkillEnvelope reads a skill's bus message as every consumer will
// (envelope.ReadHeader): a message whose envelope consumers could read
// differently, whose type is not its topic's, or whose context.skill_id
// names another skill is refused. A forged skill_id is refused, not
// rewritten: a rewrite would silently change what the skill believes it
// sent, and a refusal is visible.
func checkSkillEnvelope(a *Account, topic string, payload []byte) *refusal {
	t, ok := busType(topic)
	if !ok {
		return nil
	}
	h, err := envelope.ReadHeader(payload)
	switch {
	case err != nil:
		return refused(packets.ErrPayloadFormatInvalid, "not a valid bus message: "+err.Error(), countPayload)
	case h.Type != t:
		return refused(packets.ErrPayloadFormatInvalid, "the message's type is not its topic's", countPayload)
	case h.HasSkillID && h.SkillID != a.Skill:
		return refused(packets.ErrNotAuthorized, "context.skill_id names another skill", countACL)
	}
	return nil
}

// OnPublish decides every publish of a remote client (OnACLCheck lets
// writes through to here): the account's rate, then policy.check. An
// accepted retained publish gets its own strings (retain.go); a
// non-retained one gets its expiry capped. Retained state never gets an
// expiry from the broker: device state must outlive any disconnect.
// It changes *pk only when it accepts the publish (mochi's Hook.OnPublish
// takes the packet by pointer in this fork, docs/broker.md).
func (p *policy) OnPublish(cl *mqtt.Client, pk *packets.Packet) error {
	if cl.Net.Inline {
		return nil
	}
	s := p.session(cl)
	a, ok := p.table.Load().Lookup(string(cl.Properties.Username))
	if s == nil || !ok {
		return p.refuse(cl, pk, refused(packets.ErrNotAuthorized, "not authenticated", countACL))
	}
	if !p.allowRate(s) {
		return p.refuse(cl, pk, refused(packets.ErrQuotaExceeded, "publish rate limit of the account reached", func(c *counters) { c.throttled.Add(1) }))
	}
	if r := p.check(a, pk.TopicName, pk.Payload, pk.FixedHeader.Retain); r != nil {
		return p.refuse(cl, pk, r)
	}
	if pk.FixedHeader.Retain {
		ownStrings(pk)
		return nil
	}
	if e := pk.Properties.MessageExpiryInterval; p.maxExpiry > 0 && (e == 0 || e > p.maxExpiry) {
		pk.Properties.MessageExpiryInterval = p.maxExpiry
		pk.Expiry = pk.Created + int64(p.maxExpiry)
	}
	return nil
}

// refuse answers a refused publish as the protocol wants and drops it: QoS
// 1 gets a PUBACK, QoS 2 a PUBREC (which ends the exchange, [MQTT-4.3.3]),
// with the reason code and string in MQTT 5; MQTT 3.1.1 has no reason
// codes, so its publish is acknowledged and dropped, not answered with a
// disconnect. QoS 0 is dropped silently. The ack carries none of the
// publisher's properties. Refusals are counted, and logged at a bounded
// rate (a refused flood must not become a log flood).
func (p *policy) refuse(cl *mqtt.Client, pk *packets.Packet, r *refusal) error {
	r.count(&p.stats)
	p.publishLog.log(p.log, slog.LevelInfo, "publish refused: "+r.why,
		"client", peerText(cl.ID), "topic", peerText(pk.TopicName), "bytes", len(pk.Payload))
	ack := packets.Packet{PacketID: pk.PacketID, ReasonCode: r.code.Code}
	switch pk.FixedHeader.Qos {
	case 1:
		ack.FixedHeader.Type = packets.Puback
	case 2:
		ack.FixedHeader.Type = packets.Pubrec
	default:
		return packets.ErrRejectPacket
	}
	ack.Properties.ReasonString = r.why
	_ = cl.WritePacket(&ack) // a closed connection has nothing to acknowledge
	return packets.ErrRejectPacket
}

// busType returns the message type of a bus topic chorus/v1/<device>/bus/<type>.
func busType(topic string) (string, bool) {
	rest, ok := strings.CutPrefix(topic, treeRoot)
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	return strings.CutPrefix(rest, "bus/")
}

// typeDenied reports whether a publish on topic carries a type the account
// may not emit: one DenyTypes names and AllowTypes does not.
func typeDenied(a *Account, topic string) bool {
	if len(a.DenyTypes) == 0 {
		return false
	}
	t, ok := busType(topic)
	if !ok {
		return false
	}
	return typeMatches(a.DenyTypes, t) && !typeMatches(a.AllowTypes, t)
}

// typeMatches reports whether a type or "prefix*" pattern in list names t.
func typeMatches(list []string, t string) bool {
	for _, d := range list {
		if p, prefix := strings.CutSuffix(d, "*"); prefix && strings.HasPrefix(t, p) || t == d {
			return true
		}
	}
	return false
}
