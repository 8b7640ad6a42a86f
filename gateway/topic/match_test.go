package topic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/b", "a", false},
		{"a", "a/b", false},
		{"a/b", "a/b/", false},
		{"A", "a", false}, // case-sensitive [MQTT-4.7.3-4]
		// '+' matches exactly one level, including an empty one [MQTT-4.7.1-2].
		{"+", "a", true},
		{"+", "a/b", false},
		{"+", "/a", false},
		{"+/+", "/a", true},
		{"+/a", "/a", true},
		{"a/+", "a/", true},
		{"a/+", "a", false},
		{"a/+/c", "a//c", true},
		{"a/+/c", "a/b/c", true},
		{"a/+/c", "a/b/d", false},
		{"chorus/v1/+/bus/+", "chorus/v1/k/bus/recognizer_loop:utterance", true},
		{"chorus/v1/+/bus/+", "chorus/v1/k/bus", false},
		{"chorus/v1/+/bus/+", "chorus/v1/k/bus/a/b", false},
		// '#' matches the parent and any children [MQTT-4.7.1-1].
		{"#", "a", true},
		{"#", "a/b/c", true},
		{"#", "/", true},
		{"a/#", "a", true},
		{"a/#", "a/", true},
		{"a/#", "a/b/c", true},
		{"a/#", "ab", false},
		{"a/#", "b/a", false},
		{"a/b/#", "a", false},
		{"+/#", "a", true},
		{"+/+/#", "a", false},
		{"/#", "/", true},
		{"/#", "a", false},
		// Empty levels are levels.
		{"/", "/", true},
		{"//", "//", true},
		{"a//b", "a/b", false},
		// '$' topics are not matched by a leading wildcard [MQTT-4.7.2-1].
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"+", "$SYS", false},
		{"$SYS/#", "$SYS/x", true},
		{"$SYS/+", "$SYS/x", true},
		{"a/#", "a/$b", true},
		// Invalid filters and topics never match.
		{"a/#/b", "a/x/b", false},
		{"a#", "a#", false},
		{"a+", "a+", false},
		{"a+", "ab", false},
		{"#/a", "b/a", false},
		{"+", "+", false},
		{"a/+", "a/#", false},
		{"", "", false},
		{"#", "", false},
		{"", "a", false},
	}
	for _, tt := range tests {
		if got := topic.Match(tt.filter, tt.topic); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.filter, tt.topic, got, tt.want)
		}
		if tt.want != refMatch(tt.filter, tt.topic) {
			t.Errorf("refMatch(%q, %q) disagrees with the table", tt.filter, tt.topic)
		}
	}
}

// refMatch is an obviously-correct, slow MQTT matcher to check Match against.
func refMatch(filter, topicName string) bool {
	if topic.ValidFilter(filter) != nil || topicName == "" || strings.ContainsAny(topicName, "+#") {
		return false
	}
	if topicName[0] == '$' && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	f, n := strings.Split(filter, "/"), strings.Split(topicName, "/")
	for i, fl := range f {
		if fl == "#" {
			return true
		}
		if i >= len(n) || fl != "+" && fl != n[i] {
			return false
		}
	}
	return len(f) == len(n)
}

// FuzzMatch checks Match against refMatch on filters the broker accepts.
func FuzzMatch(f *testing.F) {
	f.Add("a/+/#", "a/b/c")
	f.Add("#", "$SYS")
	f.Add("+/+", "/")
	f.Add("chorus/v1/+/bus/+", "chorus/v1/k/bus/x")
	f.Fuzz(func(t *testing.T, filter, name string) {
		if topic.ValidFilter(filter) != nil || topic.ValidName(name) != nil {
			return
		}
		if got, want := topic.Match(filter, name), refMatch(filter, name); got != want {
			t.Fatalf("Match(%q, %q) = %v, want %v", filter, name, got, want)
		}
	})
}

func TestValidFilter(t *testing.T) {
	tests := []struct {
		filter string
		ok     bool
	}{
		{"a", true},
		{"#", true},
		{"+", true},
		{"a/#", true},
		{"+/+/#", true},
		{"/", true},
		{"$SYS/#", true},
		{"a/+/c", true},
		{"", false},
		{"a#", false},
		{"a/#/b", false},
		{"#/", false},
		{"a+", false},
		{"a/+b", false},
		{"a\x00", false},
		{"\xff", false},
		{strings.Repeat("a", 65536), false},
	}
	for _, tt := range tests {
		err := topic.ValidFilter(tt.filter)
		if (err == nil) != tt.ok {
			t.Errorf("ValidFilter(%.20q) = %v, want ok=%v", tt.filter, err, tt.ok)
		}
		if err != nil && !errors.Is(err, topic.ErrInvalidFilter) {
			t.Errorf("ValidFilter(%.20q) = %v, want ErrInvalidFilter", tt.filter, err)
		}
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"/", true},
		{"$SYS/x", true},
		{"chorus/v1/k/bus/recognizer_loop:utterance", true},
		{"", false},
		{"a/+", false},
		{"a/#", false},
		{"a\x00", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		err := topic.ValidName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, topic.ErrInvalidName) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalidName", tt.name, err)
		}
	}
}
