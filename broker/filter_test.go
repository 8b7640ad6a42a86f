package broker

import "testing"

func TestCovers(t *testing.T) {
	tests := []struct {
		allowed, sub string
		want         bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/+", true},
		{"a/+", "a/#", false},
		{"a/+", "a/b/c", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"a/#", "a/+/c", true},
		{"a/b", "a/+", false},
		{"+/b", "a/b", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/broker/version", true},
		{"chorus/v1/pi-1/#", "chorus/v1/+/bus/+", false},
		{"chorus/v1/+/bus/+", "chorus/v1/pi-1/bus/speak", true},
		{"chorus/v1/+/bus/+", "chorus/v1/pi-1/bus/a/b", false},
		{"a/+", "a/", true},
		{"a/b/c", "a/b", false},
		{"a", "a/b", false},
	}
	for _, tc := range tests {
		if got := covers(tc.allowed, tc.sub); got != tc.want {
			t.Errorf("covers(%q, %q) = %v, want %v", tc.allowed, tc.sub, got, tc.want)
		}
	}
}

func BenchmarkACLDecision(b *testing.B) {
	a := DeviceAccount("pi-kitchen", "sha256:00", nil, 1)
	for b.Loop() {
		coveredBy(a.Publish, "chorus/v1/pi-kitchen/bus/recognizer_loop:utterance")
	}
}
