package topic_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{
		"chorus/v1/pi-kitchen/bus/recognizer_loop:utterance",
		"chorus/v1/pi-kitchen/skill/hello.chorus/update/set",
		"chorus/v1/pi-kitchen/availability",
	} {
		b.Run(s[len("chorus/v1/pi-kitchen/"):], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := topic.Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMatch(b *testing.B) {
	tests := []struct{ name, filter, topic string }{
		{"exact", "chorus/v1/pi-kitchen/bus/speak", "chorus/v1/pi-kitchen/bus/speak"},
		{"plus", topic.AllBus, "chorus/v1/pi-kitchen/bus/recognizer_loop:utterance"},
		{"hash", "chorus/v1/pi-kitchen/#", "chorus/v1/pi-kitchen/skill/hello.chorus/update/set"},
		{"miss", "chorus/v1/pi-hall/#", "chorus/v1/pi-kitchen/bus/speak"},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				topic.Match(tt.filter, tt.topic)
			}
		})
	}
}
