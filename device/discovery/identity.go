package discovery

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Identity is the collision identity of a skill name: Unicode NFKC,
// whitespace collapsed to single spaces and trimmed, then case folded (and
// NFKC again, since folding can leave a string that is not NFKC). So
// "Hello.Skill", "hello.skill", "ＨＥＬＬＯ.skill" and " hello.skill " are one
// identity. SKILL_MANAGER §1; seeds/002: _canonical_skill_name.
func Identity(name string) string {
	s := strings.Join(strings.Fields(norm.NFKC.String(name)), " ")
	return norm.NFKC.String(cases.Fold().String(s))
}

// validID reports whether s is a skill id: [A-Za-z0-9._-], 1-64 bytes, not
// "." or "..", not starting with "-" or ".". ARCHITECTURE §3.
//
// It mirrors gateway/topic's rule; this package keeps its own copy so that
// device/ does not depend on gateway/.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' || s[0] == '.' {
		return false // also rules out "." and ".."
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
