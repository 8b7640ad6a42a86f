package broker

import (
	"encoding/json"
	"strings"
)

// busType returns the message type of a bus topic chorus/v1/<device>/bus/<type>.
func busType(topic string) (string, bool) {
	rest, ok := strings.CutPrefix(topic, treeRoot)
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	return strings.CutPrefix(rest, "bus/")
}

// typeDenied reports whether a publish on topic carries a type the account
// may not emit: one DenyTypes names and AllowTypes does not.
func typeDenied(a *Account, topic string) bool {
	if len(a.DenyTypes) == 0 {
		return false
	}
	t, ok := busType(topic)
	if !ok {
		return false
	}
	return typeMatches(a.DenyTypes, t) && !typeMatches(a.AllowTypes, t)
}

// typeMatches reports whether a type or "prefix*" pattern in list names t.
func typeMatches(list []string, t string) bool {
	for _, d := range list {
		if p, prefix := strings.CutSuffix(d, "*"); prefix && strings.HasPrefix(t, p) || t == d {
			return true
		}
	}
	return false
}

// forgedSkillID reports whether a skill's bus message names another skill in
// context.skill_id. Chorus refuses such a message rather than rewriting it:
// a rewrite would silently change what the skill believes it sent.
func forgedSkillID(a *Account, topic string, payload []byte) bool {
	if a.Role != RoleSkill {
		return false
	}
	if _, ok := busType(topic); !ok {
		return false
	}
	var m struct {
		Context struct {
			SkillID *string `json:"skill_id"`
		} `json:"context"`
	}
	if json.Unmarshal(payload, &m) != nil || m.Context.SkillID == nil {
		return false // malformed messages are the bus clients' to drop
	}
	return *m.Context.SkillID != a.Skill
}
