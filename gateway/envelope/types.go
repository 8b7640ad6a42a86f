package envelope

import (
	"strings"
	"unicode/utf8"
)

// ValidateType checks the strict MSG-1 §2.1 syntax that Chorus applies to the
// types it produces itself: non-empty; ASCII letters, digits, '.', ':', '_',
// '-'; no leading or trailing '.' or ':'; no "..", "::", ".:" or ":.".
// A nil result implies ValidTopicLevel(t) == nil.
func ValidateType(t string) error {
	if t == "" {
		return &TypeError{Type: t, Reason: "empty"}
	}
	for i := 0; i < len(t); i++ {
		if !typeByte(t[i]) {
			return &TypeError{Type: t, Reason: "only ASCII letters, digits, '.', ':', '_' and '-' are allowed (MSG-1 §2.1)"}
		}
	}
	if isSep(t[0]) || isSep(t[len(t)-1]) {
		return &TypeError{Type: t, Reason: "must not begin or end with '.' or ':' (MSG-1 §2.1)"}
	}
	for i := 1; i < len(t); i++ {
		if isSep(t[i-1]) && isSep(t[i]) {
			return &TypeError{Type: t, Reason: "must not contain \"..\", \"::\", \".:\" or \":.\" (MSG-1 §2.1)"}
		}
	}
	return nil
}

// ValidTopicLevel is the looser rule consumers apply (BUS.md §1): any
// non-empty UTF-8 string that can be one MQTT topic level, so legacy types
// such as "recognizer_loop:utterance" or "<skill_id>:<intent>" pass. A type
// holding '/', '+', '#' or NUL is refused: '/' would split the level and the
// others are forbidden in topic names ([MQTT-4.7.1-1], [MQTT-1.5.4-2]).
func ValidTopicLevel(t string) error {
	if t == "" {
		return &TypeError{Type: t, Reason: "empty"}
	}
	if i := strings.IndexAny(t, "/+#\x00"); i >= 0 {
		return &TypeError{Type: t, Reason: "contains " + quoteByte(t[i]) + ", which cannot be part of one MQTT topic level"}
	}
	if !utf8.ValidString(t) {
		return &TypeError{Type: t, Reason: "not valid UTF-8"}
	}
	return nil
}

func typeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == ':' || c == '_' || c == '-'
}

func isSep(c byte) bool { return c == '.' || c == ':' }

func quoteByte(c byte) string {
	if c == 0 {
		return "NUL"
	}
	return "'" + string(rune(c)) + "'"
}
