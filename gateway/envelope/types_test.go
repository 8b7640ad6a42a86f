package envelope_test

import (
	"errors"
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

func TestValidateType(t *testing.T) {
	tests := []struct {
		name   string
		typ    string
		strict bool // ValidateType accepts
		level  bool // ValidTopicLevel accepts
	}{
		{"dotted", "ovos.utterance.handle", true, true},
		{"dispatch", "hello.chorus:HelloIntent", true, true},
		{"legacy", "recognizer_loop:utterance", true, true},
		{"digits dash underscore", "a-1_b.c2", true, true},
		{"single char", "x", true, true},
		{"empty", "", false, false},
		{"leading dot", ".a", false, true},
		{"trailing dot", "a.", false, true},
		{"leading colon", ":a", false, true},
		{"trailing colon", "a:", false, true},
		{"double dot", "a..b", false, true},
		{"double colon", "a::b", false, true},
		{"dot colon", "a.:b", false, true},
		{"colon dot", "a:.b", false, true},
		{"space", "a b", false, true},
		{"non-ASCII", "héllo", false, true},
		{"dollar", "$SYS", false, true},
		{"slash", "a/b", false, false},
		{"plus", "a+b", false, false},
		{"hash", "#", false, false},
		{"NUL", "a\x00", false, false},
		{"invalid UTF-8", "a\xff", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := envelope.ValidateType(tt.typ); (err == nil) != tt.strict {
				t.Errorf("ValidateType(%q) = %v, want ok=%v", tt.typ, err, tt.strict)
			} else if err != nil && !errors.Is(err, envelope.ErrBadType) {
				t.Errorf("ValidateType(%q) = %v, want errors.Is ErrBadType", tt.typ, err)
			}
			if err := envelope.ValidTopicLevel(tt.typ); (err == nil) != tt.level {
				t.Errorf("ValidTopicLevel(%q) = %v, want ok=%v", tt.typ, err, tt.level)
			}
		})
	}
}
