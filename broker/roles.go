package broker

import (
	"strings"

	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// The account constructors below encode the ACL matrix of ARCHITECTURE.md §6.
// Topic strings are spelled from the tree of §3.

const treeRoot = "chorus/v1/"

// DeviceAccount returns the account of a device's agent: it reads and writes
// only its own subtree, retains only its state topics, and never writes desired.
func DeviceAccount(device, secretHash string, skillKey []byte, keyVersion int) Account {
	// The gateway holds one of these per enrolled device (10,000 at the
	// fleet benchmark), so its six topics are substrings of one string and
	// its three lists windows on one array: two allocations, not eight
	// (376 -> 256 bytes a device, TestDeviceAccountIsCompact). The lists are
	// read only; a full slice expression keeps an append to one from
	// writing into another.
	own := treeRoot + device + "/"
	suffixes := [...]string{"availability", "birth", "connectivity", "skills", "bus/+", "#"}
	var b strings.Builder
	b.Grow(len(suffixes)*len(own) + len("availabilitybirthconnectivityskillsbus/+#"))
	for _, s := range suffixes {
		b.WriteString(own)
		b.WriteString(s)
	}
	all := b.String()
	topics := make([]string, len(suffixes))
	at := 0
	for i, s := range suffixes {
		topics[i] = all[at : at+len(own)+len(s)]
		at += len(own) + len(s)
	}
	return Account{
		Username:   device,
		Role:       RoleDevice,
		Device:     device,
		SecretHash: secretHash,
		Publish:    topics[0:5:5], // the four state topics and own+"bus/+"
		Retain:     topics[0:4:4], // the state topics
		Subscribe:  topics[5:6:6], // own+"#"
		SkillKey:   skillKey,
		KeyVersion: keyVersion,
	}
}

// SkillDenyTypes are the management and state types a skill may not emit by
// default (ARCHITECTURE.md §6): installing software, steering the skill
// manager or faking connectivity is the agent's business, and an open bus
// that allowed it is the OVOS hole (mycroft-core#1517).
var SkillDenyTypes = []string{
	"skillmanager.*", "ovos.pip.*", "ovos.skills.install*", "ovos.skills.uninstall*",
	"mycroft.network.*", "mycroft.internet.*", "mycroft.gui.*",
	// The PHAL connectivity answer the agent trusts for state, and the
	// stock OVOS services' configuration change.
	"ovos.PHAL.internet_check.response", "configuration.patch",
}

// RestrictedForSkills reports whether every type the type or "prefix*"
// pattern t names is in SkillDenyTypes: only such types can be granted to a
// skill (anything else a skill may emit already).
func RestrictedForSkills(t string) bool {
	p, isPattern := strings.CutSuffix(t, "*")
	for _, d := range SkillDenyTypes {
		dp, dPattern := strings.CutSuffix(d, "*")
		switch {
		case dPattern && strings.HasPrefix(p, dp):
			return true
		case !dPattern && !isPattern && t == d:
			return true
		}
	}
	return false
}

// SkillAccount returns the account of a skill process: it reads and writes
// only its device's bus, never retained, never the device's state topics,
// never the management types of SkillDenyTypes except those its grant
// allows (types or "prefix*" patterns; see RestrictedForSkills).
func SkillAccount(device, skill string, allow ...string) Account {
	bus := treeRoot + device + "/bus/+"
	return Account{
		Username:   skillcred.Username(device, skill),
		Role:       RoleSkill,
		Device:     device,
		Skill:      skill,
		Publish:    []string{bus},
		Subscribe:  []string{bus},
		DenyTypes:  SkillDenyTypes,
		AllowTypes: allow,
	}
}

// IntegrationAccount returns an observer such as Home Assistant: it reads the
// tree and Home Assistant's discovery topics, and writes only skill switches,
// update requests, Home Assistant's status and the bus types it was granted.
func IntegrationAccount(name, secretHash string, allowTypes ...string) Account {
	pub := []string{
		treeRoot + "+/skill/+/set",
		treeRoot + "+/skill/+/update/set",
		"homeassistant/status",
	}
	for _, t := range allowTypes {
		pub = append(pub, treeRoot+"+/bus/"+t)
	}
	return Account{
		Username:   "integration:" + name,
		Role:       RoleIntegration,
		SecretHash: secretHash,
		Publish:    pub,
		Subscribe:  []string{treeRoot + "#", "homeassistant/#"},
	}
}

// ObserverAccount returns a read-only integration account (`chorus up`'s
// integration:observer, for mosquitto_sub and dashboards): it reads what an
// integration reads and publishes nothing, so it cannot switch skills or
// ask for installs (issue 16 §7). Home Assistant, which writes switches and
// its status, gets an integration account of its own.
func ObserverAccount(name, secretHash string) Account {
	a := IntegrationAccount(name, secretHash)
	a.Publish = nil
	return a
}

// OperatorAccount returns a person's `chorus bus` credential: it reads
// everything and emits bus messages to any device, never retained and never
// desired; fleet changes go through the HTTP API.
func OperatorAccount(name, secretHash string) Account {
	return Account{
		Username:   "operator:" + name,
		Role:       RoleOperator,
		SecretHash: secretHash,
		Publish:    []string{treeRoot + "+/bus/+"},
		Subscribe:  []string{treeRoot + "#", "homeassistant/#", "$SYS/#"},
	}
}
