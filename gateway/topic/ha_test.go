package topic_test

import (
	"errors"
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func TestHAEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"kitchen", "kitchen"},
		{"Pi-4", "Pi-4"},
		{"a_b", "a__b"},
		{"a.b", "a_db"},
		{"a_.b", "a___db"},
		{"a_d", "a__d"},
		{"_d", "__d"},
		{".", "_d"},
		{"", ""},
		{"a/b", "a_x2fb"},
		{"é", "_xc3_xa9"},
	}
	for _, tt := range tests {
		if got := topic.HAEscape(tt.in); got != tt.want {
			t.Errorf("HAEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, err := topic.HAUnescape(tt.want); err != nil || got != tt.in {
			t.Errorf("HAUnescape(%q) = %q, %v; want %q", tt.want, got, err, tt.in)
		}
	}
}

func TestHAUnescapeRefuses(t *testing.T) {
	for _, s := range []string{"_", "a_", "_z", "_x", "_x2", "_x2F", "_xzz", "a.b", "a b", "a/b"} {
		if got, err := topic.HAUnescape(s); !errors.Is(err, topic.ErrBadEscape) {
			t.Errorf("HAUnescape(%q) = %q, %v; want ErrBadEscape", s, got, err)
		}
	}
}

// FuzzHAEscape: the escape is injective (HAUnescape inverts it), its output
// uses only [a-zA-Z0-9_-], and HAUnescape accepts only what HAEscape makes.
func FuzzHAEscape(f *testing.F) {
	for _, s := range []string{"", "a_b.c-d", "__d", "_d", "é/#", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := topic.HAEscape(s)
		for i := 0; i < len(e); i++ {
			c := e[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				t.Fatalf("HAEscape(%q) = %q holds %q", s, e, c)
			}
		}
		if got, err := topic.HAUnescape(e); err != nil || got != s {
			t.Fatalf("HAUnescape(HAEscape(%q)) = %q, %v", s, got, err)
		}
		if u, err := topic.HAUnescape(s); err == nil && topic.HAEscape(u) != s {
			t.Fatalf("HAEscape(HAUnescape(%q)) = %q", s, topic.HAEscape(u))
		}
	})
}
