package broker

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// OnConnect decides a CONNECT, before mochi looks at any session: the
// credentials, the client id (identity.go), the Will (the same check as a
// publish), the account's connection limit and the session expiry cap. A
// refusal is answered here with a CONNACK whose reason code and reason
// string say what was refused, and the returned error makes mochi close the
// connection without a second CONNACK. OnConnectAuthenticate then only
// reports what was decided here.
func (p *policy) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	a, err := p.table.Load().Authenticate(string(pk.Connect.Username), pk.Connect.Password)
	if err != nil {
		return p.refuseConnect(cl, pk, packets.ErrBadUsernameOrPassword, "bad username or password", packets.ErrBadUsernameOrPassword)
	}
	id, why := clientID(a, cl)
	if why != "" {
		return p.refuseConnect(cl, pk, packets.ErrClientIdentifierNotValid, why, packets.ErrClientIdentifierNotValid)
	}
	if pk.Connect.WillFlag {
		if r := p.check(a, pk.Connect.WillTopic, pk.Connect.WillPayload, pk.Connect.WillRetain); r != nil {
			p.stats.willsRefused.Add(1)
			// MQTT 3.1.1 has no code for it: "not authorized" (0x05).
			return p.refuseConnect(cl, pk, r.code, "will refused: "+r.why, packets.ErrBadUsernameOrPassword)
		}
	}
	lim := p.cfg.limits(a.Role)
	st, live, ok := p.accounts.join(a.Username, cl, id, lim.Connections, func() *bucket { return p.newBucket(lim) })
	if !ok {
		p.stats.overConnections.Add(1)
		why := "account already has " + strconv.Itoa(live) + " connections (limit " + strconv.Itoa(lim.Connections) + ")"
		return p.refuseConnect(cl, pk, packets.ErrQuotaExceeded, why, packets.ErrServerUnavailable)
	}
	s := &session{username: a.Username, password: bytes.Clone(pk.Connect.Password), account: st}
	p.capExpiry(cl, s, lim)
	if id != cl.ID {
		if cl.Properties.Props.AssignedClientID != "" {
			cl.Properties.Props.AssignedClientID = id // [MQTT-3.2.2-16]
		}
		cl.ID = id
	}
	p.sessions.store(cl, s)
	if pc, ok := cl.Net.Conn.(*preauthConn); ok {
		pc.authenticated()
	}
	return nil
}

// OnConnectAuthenticate accepts exactly the clients OnConnect accepted.
func (p *policy) OnConnectAuthenticate(cl *mqtt.Client, _ packets.Packet) bool {
	return p.session(cl) != nil
}

// capExpiry lowers the session expiry an MQTT 5 client asked for to its
// role's cap and remembers it for the CONNACK [MQTT-3.2.2.3.2]. MQTT 3.1.1
// persistent sessions expire at the broker-wide maximum (the largest cap).
func (p *policy) capExpiry(cl *mqtt.Client, s *session, lim *RoleLimits) {
	props := &cl.Properties.Props
	if cl.Properties.ProtocolVersion != 5 || lim.MaxSessionExpiry < 0 || int64(props.SessionExpiryInterval) <= lim.MaxSessionExpiry {
		return
	}
	props.SessionExpiryInterval = uint32(lim.MaxSessionExpiry)
	props.SessionExpiryIntervalFlag = true
	s.expiry, s.lowered = uint32(lim.MaxSessionExpiry), true
	if w := &cl.Properties.Will; w.WillDelayInterval > s.expiry {
		w.WillDelayInterval = s.expiry // the Will is sent when the session ends at the latest [MQTT-3.1.3-9]
	}
}

// OnPacketEncode tells a client whose session expiry was lowered the value
// it got, in its CONNACK.
func (p *policy) OnPacketEncode(cl *mqtt.Client, pk *packets.Packet) {
	if pk.FixedHeader.Type != packets.Connack || pk.ReasonCode != 0 {
		return
	}
	if s := p.session(cl); s != nil && s.lowered {
		pk.Properties.SessionExpiryInterval = s.expiry
		pk.Properties.SessionExpiryIntervalFlag = true
	}
}

// refuseConnect answers a refused CONNECT with code (MQTT 5, reason string
// why) or v3 (MQTT 3.1.1, which has a code for fewer cases), logs it at a
// bounded rate with the peer's names sanitised, and returns the error that
// makes mochi close the connection.
func (p *policy) refuseConnect(cl *mqtt.Client, pk packets.Packet, code packets.Code, why string, v3 packets.Code) error {
	p.stats.connectsRefused.Add(1)
	p.connectLog.log(p.log, slog.LevelInfo, "mqtt connect refused: "+why,
		"client", peerText(cl.ID), "username", peerText(pk.Connect.Username), "remote", cl.Net.Remote)
	reply := packets.Code{Code: code.Code, Reason: why}
	if cl.Properties.ProtocolVersion < 5 {
		reply = v3 // mapped to its 3.1.1 return code by SendConnack
	}
	if err := p.srv.SendConnack(cl, reply, false, nil); err != nil {
		return fmt.Errorf("refuse connect: %w", err)
	}
	return code
}
