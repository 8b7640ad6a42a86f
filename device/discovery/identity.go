package discovery

import (
	"github.com/chorus-edge/chorus/gateway/topic"
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

// validID reports whether s is a skill id (ARCHITECTURE §3); the rule lives
// in gateway/topic, which owns the topic tree the id becomes part of.
func validID(s string) bool { return topic.ValidSkillID(s) == nil }
