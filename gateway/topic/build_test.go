package topic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestBuildParseRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		build func() (string, error)
		want  string
		parse topic.Topic
	}{
		{"availability", func() (string, error) { return topic.Availability("kitchen") }, "chorus/v1/kitchen/availability",
			topic.Topic{Device: "kitchen", Kind: topic.KindAvailability}},
		{"birth", func() (string, error) { return topic.Birth("kitchen") }, "chorus/v1/kitchen/birth",
			topic.Topic{Device: "kitchen", Kind: topic.KindBirth}},
		{"connectivity", func() (string, error) { return topic.Connectivity("k") }, "chorus/v1/k/connectivity",
			topic.Topic{Device: "k", Kind: topic.KindConnectivity}},
		{"skills", func() (string, error) { return topic.Skills("k") }, "chorus/v1/k/skills",
			topic.Topic{Device: "k", Kind: topic.KindSkills}},
		{"desired", func() (string, error) { return topic.Desired("k") }, "chorus/v1/k/desired",
			topic.Topic{Device: "k", Kind: topic.KindDesired}},
		{"bus dotted", func() (string, error) { return topic.Bus("sat-7", "ovos.skills.list") }, "chorus/v1/sat-7/bus/ovos.skills.list",
			topic.Topic{Device: "sat-7", Kind: topic.KindBus, MsgType: "ovos.skills.list"}},
		{"bus legacy", func() (string, error) { return topic.Bus("sat-7", "recognizer_loop:utterance") }, "chorus/v1/sat-7/bus/recognizer_loop:utterance",
			topic.Topic{Device: "sat-7", Kind: topic.KindBus, MsgType: "recognizer_loop:utterance"}},
		{"bus type named like a kind", func() (string, error) { return topic.Bus("k", "availability") }, "chorus/v1/k/bus/availability",
			topic.Topic{Device: "k", Kind: topic.KindBus, MsgType: "availability"}},
		{"bus type filter", func() (string, error) { return topic.BusTypeFilter("k", "speak") }, "chorus/v1/k/bus/speak",
			topic.Topic{Device: "k", Kind: topic.KindBus, MsgType: "speak"}},
		{"skill set", func() (string, error) { return topic.SkillSet("k", "hello.chorus") }, "chorus/v1/k/skill/hello.chorus/set",
			topic.Topic{Device: "k", Kind: topic.KindSkillSet, Skill: "hello.chorus"}},
		{"skill update", func() (string, error) { return topic.SkillUpdate("k", "hello.chorus") }, "chorus/v1/k/skill/hello.chorus/update",
			topic.Topic{Device: "k", Kind: topic.KindSkillUpdate, Skill: "hello.chorus"}},
		{"skill update set", func() (string, error) { return topic.SkillUpdateSet("k", "hello.chorus") }, "chorus/v1/k/skill/hello.chorus/update/set",
			topic.Topic{Device: "k", Kind: topic.KindSkillUpdateSet, Skill: "hello.chorus"}},
		{"skill named gateway", func() (string, error) { return topic.SkillSet("k", "gateway") }, "chorus/v1/k/skill/gateway/set",
			topic.Topic{Device: "k", Kind: topic.KindSkillSet, Skill: "gateway"}},
		{"gateway availability", func() (string, error) { return topic.GatewayAvailability, nil }, "chorus/v1/gateway/availability",
			topic.Topic{Device: "gateway", Kind: topic.KindGatewayAvailability}},
		{"gateway fleet", func() (string, error) { return topic.GatewayFleet, nil }, "chorus/v1/gateway/fleet",
			topic.Topic{Device: "gateway", Kind: topic.KindGatewayFleet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.build()
			if err != nil || got != tt.want {
				t.Fatalf("build = %q, %v; want %q", got, err, tt.want)
			}
			p, err := topic.Parse(got)
			if err != nil || p != tt.parse {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", got, p, err, tt.parse)
			}
			if s := p.String(); s != got {
				t.Errorf("String() = %q, want %q", s, got)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name  string
		build func() (string, error)
		want  string
	}{
		{"bus prefix", func() (string, error) { return topic.BusPrefix("k") }, "chorus/v1/k/bus/"},
		{"bus filter", func() (string, error) { return topic.BusFilter("k") }, "chorus/v1/k/bus/+"},
		{"device filter", func() (string, error) { return topic.DeviceFilter("k") }, "chorus/v1/k/#"},
		{"any device type filter", func() (string, error) { return topic.BusTypeFilter(topic.AnyDevice, "speak") }, "chorus/v1/+/bus/speak"},
		{"ha discovery", func() (string, error) { return topic.HADiscovery("homeassistant", "pi_kitchen.2") }, "homeassistant/device/chorus_pi__kitchen_d2/config"},
		{"ha discovery multi-level prefix", func() (string, error) { return topic.HADiscovery("ha/disc", "a-b") }, "ha/disc/device/chorus_a-b/config"},
		{"ha status", func() (string, error) { return topic.HAStatus(topic.DefaultHAPrefix) }, "homeassistant/status"},
		{"ha gateway discovery", func() (string, error) { return topic.HAGatewayDiscovery(topic.DefaultHAPrefix) }, "homeassistant/device/chorus_gateway/config"},
		{"ha gateway discovery multi-level prefix", func() (string, error) { return topic.HAGatewayDiscovery("ha/disc") }, "ha/disc/device/chorus_gateway/config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.build()
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if err := topic.ValidFilter(got); err != nil {
				t.Errorf("ValidFilter(%q): %v", got, err)
			}
		})
	}
	for _, f := range []string{topic.AllBus, topic.AllAvailability, topic.AllBirth, topic.AllConnectivity, topic.AllSkills,
		topic.AllDesired, topic.AllSkillSet, topic.AllSkillUpdate, topic.AllSkillUpdateSet} {
		if err := topic.ValidFilter(f); err != nil {
			t.Errorf("ValidFilter(%q): %v", f, err)
		}
	}
}

// TestAllFiltersMatchTheirKind: each All* filter matches the topics of its
// kind and none of the others.
func TestAllFiltersMatchTheirKind(t *testing.T) {
	topics := map[topic.Kind]string{}
	for k, build := range map[topic.Kind]func() (string, error){
		topic.KindAvailability:   func() (string, error) { return topic.Availability("d") },
		topic.KindBirth:          func() (string, error) { return topic.Birth("d") },
		topic.KindConnectivity:   func() (string, error) { return topic.Connectivity("d") },
		topic.KindSkills:         func() (string, error) { return topic.Skills("d") },
		topic.KindDesired:        func() (string, error) { return topic.Desired("d") },
		topic.KindBus:            func() (string, error) { return topic.Bus("d", "speak") },
		topic.KindSkillSet:       func() (string, error) { return topic.SkillSet("d", "s") },
		topic.KindSkillUpdate:    func() (string, error) { return topic.SkillUpdate("d", "s") },
		topic.KindSkillUpdateSet: func() (string, error) { return topic.SkillUpdateSet("d", "s") },
	} {
		s, err := build()
		if err != nil {
			t.Fatal(err)
		}
		topics[k] = s
	}
	filters := map[topic.Kind]string{
		topic.KindAvailability: topic.AllAvailability, topic.KindBirth: topic.AllBirth,
		topic.KindConnectivity: topic.AllConnectivity, topic.KindSkills: topic.AllSkills,
		topic.KindDesired: topic.AllDesired, topic.KindBus: topic.AllBus,
		topic.KindSkillSet: topic.AllSkillSet, topic.KindSkillUpdate: topic.AllSkillUpdate,
		topic.KindSkillUpdateSet: topic.AllSkillUpdateSet,
	}
	for fk, f := range filters {
		for tk, s := range topics {
			if got := topic.Match(f, s); got != (fk == tk) {
				t.Errorf("Match(%q, %q) = %v, want %v", f, s, got, fk == tk)
			}
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	long := strings.Repeat("x", 65536)
	tests := []struct {
		name     string
		build    func() (string, error)
		contains string
		is       error
	}{
		{"reserved device", func() (string, error) { return topic.Availability("gateway") }, "reserved", topic.ErrInvalidID},
		{"empty device", func() (string, error) { return topic.Birth("") }, "device id \"\": empty", topic.ErrInvalidID},
		{"wildcard device", func() (string, error) { return topic.Bus("+", "speak") }, "device id", topic.ErrInvalidID},
		{"bad skill", func() (string, error) { return topic.SkillSet("k", "a/b") }, "skill id \"a/b\"", topic.ErrInvalidID},
		{"bad device for skill", func() (string, error) { return topic.SkillUpdate("-k", "s") }, "device id \"-k\"", topic.ErrInvalidID},
		{"empty type", func() (string, error) { return topic.Bus("k", "") }, "empty", topic.ErrInvalidLevel},
		{"slash type", func() (string, error) { return topic.Bus("k", "a/b") }, "'/'", topic.ErrInvalidLevel},
		{"plus type", func() (string, error) { return topic.Bus("k", "+") }, "'+'", topic.ErrInvalidLevel},
		{"hash type", func() (string, error) { return topic.BusTypeFilter(topic.AnyDevice, "#") }, "'#'", topic.ErrInvalidLevel},
		{"NUL type", func() (string, error) { return topic.Bus("k", "a\x00") }, "'\\x00'", topic.ErrInvalidLevel},
		{"type too long", func() (string, error) { return topic.Bus("k", long) }, "over the MQTT limit", nil},
		{"ha reserved device", func() (string, error) { return topic.HADiscovery("homeassistant", "gateway") }, "reserved", topic.ErrInvalidID},
		{"ha empty prefix", func() (string, error) { return topic.HADiscovery("", "k") }, "discovery prefix", nil},
		{"ha wildcard prefix", func() (string, error) { return topic.HAStatus("ha/#") }, "wildcards", topic.ErrInvalidName},
		{"ha trailing slash", func() (string, error) { return topic.HAStatus("ha/") }, "must not begin or end", nil},
		{"ha gateway wildcard prefix", func() (string, error) { return topic.HAGatewayDiscovery("ha/+") }, "wildcards", topic.ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.build()
			if err == nil {
				t.Fatalf("got %q, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want errors.Is %v", err, tt.is)
			}
		})
	}
}
