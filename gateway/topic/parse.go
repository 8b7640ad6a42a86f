package topic

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownTopic matches a Parse error for a topic outside the tree.
var ErrUnknownTopic = errors.New("not a Chorus topic")

// Kind is the kind of a topic in the tree.
type Kind int

// The kinds of ARCHITECTURE.md §3. The zero Kind is KindInvalid.
const (
	KindInvalid Kind = iota
	KindAvailability
	KindBirth
	KindConnectivity
	KindSkills
	KindDesired
	KindBus
	KindSkillSet
	KindSkillUpdate
	KindSkillUpdateSet
	KindGatewayAvailability
	KindGatewayFleet
)

// suffixes are the topic levels after the device (after skill/<skill>/ for
// skill kinds), indexed by Kind; they double as the names String returns.
var suffixes = [...]string{
	KindInvalid:             "invalid",
	KindAvailability:        "availability",
	KindBirth:               "birth",
	KindConnectivity:        "connectivity",
	KindSkills:              "skills",
	KindDesired:             "desired",
	KindBus:                 "bus",
	KindSkillSet:            "set",
	KindSkillUpdate:         "update",
	KindSkillUpdateSet:      "update/set",
	KindGatewayAvailability: "gateway/availability",
	KindGatewayFleet:        "gateway/fleet",
}

// String names the kind: "availability", "bus", "skill/set", …
func (k Kind) String() string {
	switch {
	case k < 0 || int(k) >= len(suffixes):
		return fmt.Sprintf("Kind(%d)", int(k))
	case k.isSkill():
		return "skill/" + suffixes[k]
	}
	return suffixes[k]
}

// Retained reports whether topics of kind k carry retained messages
// (ARCHITECTURE.md §3); bus and command topics refuse retained publishes.
func (k Kind) Retained() bool {
	switch k {
	case KindAvailability, KindBirth, KindConnectivity, KindSkills, KindDesired,
		KindSkillUpdate, KindGatewayAvailability, KindGatewayFleet:
		return true
	}
	return false
}

func (k Kind) isSkill() bool {
	return k == KindSkillSet || k == KindSkillUpdate || k == KindSkillUpdateSet
}

// Topic is a parsed topic name. Skill is set for the skill kinds, MsgType for
// KindBus; Device is ReservedDevice for the gateway kinds.
type Topic struct {
	Device  string
	Kind    Kind
	Skill   string
	MsgType string
}

// String formats t. For a Topic returned by Parse it is the parsed string;
// it does not validate (the builders do).
func (t Topic) String() string {
	switch {
	case t.Kind == KindGatewayAvailability:
		return GatewayAvailability
	case t.Kind == KindGatewayFleet:
		return GatewayFleet
	case t.Kind == KindBus:
		return Root + "/" + t.Device + "/bus/" + t.MsgType
	case t.Kind.isSkill():
		return Root + "/" + t.Device + "/skill/" + t.Skill + "/" + suffixes[t.Kind]
	case t.Kind > KindInvalid && int(t.Kind) < len(suffixes):
		return Root + "/" + t.Device + "/" + suffixes[t.Kind]
	}
	return ""
}

// Parse reads a topic name of the tree. Ids and the message type are
// validated as the builders do, so a nil error guarantees t.String() == s.
// Anything else (another root, an unknown or extra level, a wildcard, a bad
// id) is an error; ErrUnknownTopic, ErrInvalidID or ErrInvalidLevel match it.
func Parse(s string) (Topic, error) {
	t, err := parse(s)
	if err != nil {
		return Topic{}, fmt.Errorf("parse topic %q: %w", s, err)
	}
	return t, nil
}

func parse(s string) (Topic, error) {
	rest, ok := strings.CutPrefix(s, Root+"/")
	if !ok {
		return Topic{}, fmt.Errorf("not under %s/: %w", Root, ErrUnknownTopic)
	}
	switch rest {
	case suffixes[KindGatewayAvailability]:
		return Topic{Device: ReservedDevice, Kind: KindGatewayAvailability}, nil
	case suffixes[KindGatewayFleet]:
		return Topic{Device: ReservedDevice, Kind: KindGatewayFleet}, nil
	}
	dev, rest, _ := strings.Cut(rest, "/")
	if err := ValidDeviceID(dev); err != nil {
		return Topic{}, err
	}
	if msgType, ok := strings.CutPrefix(rest, "bus/"); ok {
		return Topic{Device: dev, Kind: KindBus, MsgType: msgType}, ValidLevel(msgType)
	}
	if r, ok := strings.CutPrefix(rest, "skill/"); ok {
		return parseSkill(dev, r)
	}
	for k := KindAvailability; k <= KindDesired; k++ {
		if rest == suffixes[k] {
			return Topic{Device: dev, Kind: k}, nil
		}
	}
	return Topic{}, fmt.Errorf("unknown device topic %q: %w", rest, ErrUnknownTopic)
}

func parseSkill(dev, rest string) (Topic, error) {
	skill, sub, _ := strings.Cut(rest, "/")
	if err := ValidSkillID(skill); err != nil {
		return Topic{}, err
	}
	for _, k := range []Kind{KindSkillSet, KindSkillUpdate, KindSkillUpdateSet} {
		if sub == suffixes[k] {
			return Topic{Device: dev, Kind: k, Skill: skill}, nil
		}
	}
	return Topic{}, fmt.Errorf("unknown skill topic %q: %w", sub, ErrUnknownTopic)
}
