package broker

import (
	"strings"

	"github.com/chorus-edge/chorus/gateway/state"
)

// Fixed payload caps of the state and command topics (ARCHITECTURE.md §3).
// Each is far above what the agent or Home Assistant writes and far below
// what would hurt a subscriber that keeps the retained value.
const (
	maxAvailability = 16             // "online" / "offline"
	maxBirth        = state.MaxBirth // the state payloads' own limits (gateway/state)
	maxConnectivity = state.MaxConnectivity
	maxSkills       = state.MaxSkills
	maxSkillSet     = 8  // "ON" / "OFF"
	maxUpdateSet    = 16 // "install"
	maxHAStatus     = 16 // Home Assistant's "online" / "offline"
)

// topicClass is what the payload limits know about a topic.
type topicClass struct {
	max  int  // payload cap in bytes; 0 = only the packet size limit
	json bool // the payload is JSON: its depth is capped
}

// classify returns the payload class of a publish by a client of role on
// topic. Bus messages get the role's cap; topics outside the tree get none
// beyond the packet size (the ACL already confined who writes them).
func (c *Config) classify(role Role, topic string) topicClass {
	if topic == "homeassistant/status" {
		return topicClass{max: maxHAStatus}
	}
	rest, ok := strings.CutPrefix(topic, treeRoot)
	if !ok {
		return topicClass{}
	}
	_, rest, ok = strings.Cut(rest, "/") // the device level
	if !ok {
		return topicClass{}
	}
	switch rest {
	case "availability":
		return topicClass{max: maxAvailability}
	case "birth":
		return topicClass{max: maxBirth, json: true}
	case "connectivity":
		return topicClass{max: maxConnectivity, json: true}
	case "skills":
		return topicClass{max: maxSkills, json: true}
	}
	if strings.HasPrefix(rest, "bus/") {
		return topicClass{max: c.limits(role).MaxBusPayload, json: true}
	}
	if skill, ok := strings.CutPrefix(rest, "skill/"); ok {
		_, sub, _ := strings.Cut(skill, "/")
		switch sub {
		case "set":
			return topicClass{max: maxSkillSet}
		case "update/set":
			return topicClass{max: maxUpdateSet}
		}
	}
	return topicClass{}
}

// payloadAllowed reports why a payload breaks its topic's limits ("" = it
// does not). The work is bounded by the payload, which the packet size caps.
func (c *Config) payloadAllowed(role Role, topic string, payload []byte) string {
	cl := c.classify(role, topic)
	switch {
	case cl.max > 0 && len(payload) > cl.max:
		return "payload too large"
	case cl.json && c.MaxJSONDepth > 0 && jsonTooDeep(payload, c.MaxJSONDepth):
		return "JSON nested too deep"
	}
	return ""
}

// jsonTooDeep reports whether b nests arrays and objects more than max deep.
// For valid JSON the count is exact (TestJSONDepthMatchesDecoder checks it
// against encoding/json's Decoder.Token); malformed JSON is not refused here,
// the bus clients drop it, but unbalanced openers still count. A single pass
// over the bytes without allocating: Decoder.Token would allocate for every
// token, and a 10 MiB array of small numbers is millions of tokens. It counts
// exactly as gateway/envelope's checkDepth does, so at the same limit the
// broker refuses precisely the messages envelope.Decode would.
func jsonTooDeep(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, ch := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		case ch == '"':
			inString = true
		case ch == '[' || ch == '{':
			if depth++; depth > max {
				return true
			}
		case ch == ']' || ch == '}':
			depth--
		}
	}
	return false
}
