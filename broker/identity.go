package broker

import (
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// maxClientID caps the client id a peer may present, bytes.
const maxClientID = 256

// clientID returns the client id cl holds as account a, or why it may not
// (docs/security.md, "Client identifiers"). Every id lives under the
// account's username: the username itself or "<username>/<suffix>". So two
// accounts never share an id, a takeover (same id) is always by the same
// account, and no remote client can reach an id the gateway uses itself
// (its in-process client is not in mochi's client table at all).
//
//   - An empty id is assigned "<username>/<random>" (mochi's xid).
//   - Devices and skills are Chorus's own software: another id is refused.
//   - Integrations and operators are stock tools (Home Assistant, Node-RED,
//     mosquitto_sub) that pick their own ids: another id is placed under the
//     username ("integration:ha/<id>"), so the tool's session works as it
//     expects and cannot touch anyone else's.
func clientID(a *Account, cl *mqtt.Client) (string, string) {
	requested, ns := cl.ID, a.Username
	if cl.Properties.Props.AssignedClientID != "" {
		return ns + "/" + requested, ""
	}
	if len(requested) > maxClientID {
		return "", "client id longer than 256 bytes"
	}
	if requested == ns || strings.HasPrefix(requested, ns+"/") {
		return requested, ""
	}
	switch a.Role {
	case RoleDevice, RoleSkill:
		return "", "client id must be the username " + ns + " (or " + ns + "/<suffix>)"
	}
	return ns + "/" + requested, ""
}
