package topic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, topic string
		is          error
	}{
		{"empty", "", topic.ErrUnknownTopic},
		{"other root", "chorus/v2/k/birth", topic.ErrUnknownTopic},
		{"root only", "chorus/v1", topic.ErrUnknownTopic},
		{"root slash", "chorus/v1/", topic.ErrInvalidID},
		{"device only", "chorus/v1/k", topic.ErrUnknownTopic},
		{"device slash", "chorus/v1/k/", topic.ErrUnknownTopic},
		{"unknown kind", "chorus/v1/k/status", topic.ErrUnknownTopic},
		{"extra level", "chorus/v1/k/birth/x", topic.ErrUnknownTopic},
		{"gateway device", "chorus/v1/gateway/birth", topic.ErrInvalidID},
		{"gateway extra", "chorus/v1/gateway/availability/x", topic.ErrInvalidID},
		{"gateway fleet extra", "chorus/v1/gateway/fleet/x", topic.ErrInvalidID},
		{"bad device", "chorus/v1/.k/birth", topic.ErrInvalidID},
		{"wildcard device", "chorus/v1/+/birth", topic.ErrInvalidID},
		{"bus without type", "chorus/v1/k/bus", topic.ErrUnknownTopic},
		{"bus empty type", "chorus/v1/k/bus/", topic.ErrInvalidLevel},
		{"bus split type", "chorus/v1/k/bus/a/b", topic.ErrInvalidLevel},
		{"bus wildcard", "chorus/v1/k/bus/+", topic.ErrInvalidLevel},
		{"skill without sub", "chorus/v1/k/skill/s", topic.ErrUnknownTopic},
		{"skill unknown sub", "chorus/v1/k/skill/s/get", topic.ErrUnknownTopic},
		{"skill extra", "chorus/v1/k/skill/s/update/set/x", topic.ErrUnknownTopic},
		{"skill bad id", "chorus/v1/k/skill/-s/set", topic.ErrInvalidID},
		{"skill empty id", "chorus/v1/k/skill//set", topic.ErrInvalidID},
		{"leading slash", "/chorus/v1/k/birth", topic.ErrUnknownTopic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := topic.Parse(tt.topic)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.topic, got)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("Parse(%q) = %v, want errors.Is %v", tt.topic, err, tt.is)
			}
			if !strings.HasPrefix(err.Error(), "parse topic ") {
				t.Errorf("error %q does not say what failed", err)
			}
		})
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		kind     topic.Kind
		name     string
		retained bool
	}{
		{topic.KindInvalid, "invalid", false},
		{topic.KindAvailability, "availability", true},
		{topic.KindBirth, "birth", true},
		{topic.KindConnectivity, "connectivity", true},
		{topic.KindSkills, "skills", true},
		{topic.KindDesired, "desired", true},
		{topic.KindBus, "bus", false},
		{topic.KindSkillSet, "skill/set", false},
		{topic.KindSkillUpdate, "skill/update", true},
		{topic.KindSkillUpdateSet, "skill/update/set", false},
		{topic.KindGatewayAvailability, "gateway/availability", true},
		{topic.KindGatewayFleet, "gateway/fleet", true},
		{topic.Kind(99), "Kind(99)", false},
		{topic.Kind(-1), "Kind(-1)", false},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.name {
			t.Errorf("Kind(%d).String() = %q, want %q", int(tt.kind), got, tt.name)
		}
		if got := tt.kind.Retained(); got != tt.retained {
			t.Errorf("%v.Retained() = %v, want %v", tt.kind, got, tt.retained)
		}
	}
	if got := (topic.Topic{Kind: topic.Kind(99)}).String(); got != "" {
		t.Errorf("String() of an invalid Topic = %q, want empty", got)
	}
}

// FuzzParse: Parse never panics, and a parsed topic rebuilds to the same
// string through String and through its kind's builder.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"chorus/v1/k/availability", "chorus/v1/gateway/availability", "chorus/v1/gateway/fleet", "chorus/v1/k/bus/recognizer_loop:utterance",
		"chorus/v1/k/skill/hello.chorus/update/set", "chorus/v1/k/skill/s/set", "chorus/v1/k/desired",
		"chorus/v1/k/bus/a/b", "chorus/v1//birth", "chorus/v1/k/skill//update",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := topic.Parse(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		if got, err := rebuild(p); err != nil || got != s {
			t.Fatalf("rebuild(Parse(%q)) = %q, %v", s, got, err)
		}
	})
}

func rebuild(p topic.Topic) (string, error) {
	switch p.Kind {
	case topic.KindAvailability:
		return topic.Availability(p.Device)
	case topic.KindBirth:
		return topic.Birth(p.Device)
	case topic.KindConnectivity:
		return topic.Connectivity(p.Device)
	case topic.KindSkills:
		return topic.Skills(p.Device)
	case topic.KindDesired:
		return topic.Desired(p.Device)
	case topic.KindBus:
		return topic.Bus(p.Device, p.MsgType)
	case topic.KindSkillSet:
		return topic.SkillSet(p.Device, p.Skill)
	case topic.KindSkillUpdate:
		return topic.SkillUpdate(p.Device, p.Skill)
	case topic.KindSkillUpdateSet:
		return topic.SkillUpdateSet(p.Device, p.Skill)
	case topic.KindGatewayAvailability:
		return topic.GatewayAvailability, nil
	case topic.KindGatewayFleet:
		return topic.GatewayFleet, nil
	}
	return "", errors.New("unknown kind " + p.Kind.String())
}
