package bridge

import (
	"encoding/binary"
	"strconv"
	"time"
	"unique"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/state"
)

// satState is what the relay knows of one routed satellite. The relay
// goroutine owns it.
type satState struct {
	online  bool
	since   time.Time // when online last changed (the relay's start if never seen)
	session uint64    // newest availability session seen (Sparkplug bdSeq)
	skills  skillIDs  // loaded skills from the retained skills topic
	// cleared is what skills held when the topic was cleared (the device was
	// removed or revoked): the controller may clear it before the route's
	// end reaches the relay, and the departure must still deregister them.
	cleared skillIDs
	pending []pending // outbound messages held while offline, oldest first
	limit   *bucket   // inbound rate limit of the route
}

type pending struct {
	msg  envelope.Message
	corr []byte
	at   time.Time
}

// availability applies an availability message; a message of an older
// session than one already seen is stale and ignored (a late Will).
func (s *satState) availability(p bus.Packet, now time.Time) (changed bool) {
	online := string(p.Payload) == "online"
	if !online && string(p.Payload) != "offline" {
		return false
	}
	sess, _ := strconv.ParseUint(p.User.Get("session"), 10, 64)
	if sess < s.session {
		return false
	}
	s.session = sess
	if online == s.online {
		return false
	}
	s.online, s.since = online, now
	return true
}

// setSkills reads the loaded skills from a skills topic payload; an empty
// payload (a cleared topic) means none, an unreadable one changes nothing.
func (s *satState) setSkills(payload []byte) { s.readSkills(payload, nil) }

// maxKeptTable bounds the skill table readSkills hands back for reuse.
const maxKeptTable = 64

// readSkills is setSkills parsing the report into table's memory; it
// returns the table to parse the next report into. Nothing it keeps refers
// to the table (the ids are copied into the interned list).
func (s *satState) readSkills(payload []byte, table []state.Skill) []state.Skill {
	if len(payload) == 0 {
		if !s.skills.empty() {
			s.cleared = s.skills
		}
		s.skills = skillIDs{}
		return table
	}
	r, err := state.ParseSkillsInto(payload, table)
	if c := cap(r.Skills); c > cap(table) && c <= maxKeptTable {
		table = r.Skills[:0]
	}
	if err != nil {
		return table
	}
	s.cleared = skillIDs{}
	var packed []byte
	for _, sk := range r.Skills {
		if sk.State == state.Loaded && sk.ID != "" {
			packed = binary.AppendUvarint(packed, uint64(len(sk.ID)))
			packed = append(packed, sk.ID...)
		}
	}
	s.skills = skillIDs{}
	if len(packed) > 0 {
		s.skills = skillIDs{unique.Make(string(packed))}
	}
	return table
}

// skillIDs is a list of skill ids, in order, held as one interned string
// (unique.Handle) of length-prefixed ids: satellites that report the same
// loaded skills share it, where a []string per satellite held a slice and
// a copy of every id (the relay keeps one per device: ~2.5 MB at 10,000
// devices, docs/benchmarks.md issue 19). unique frees the string once no
// satellite holds it. The zero value is the empty list.
type skillIDs struct{ h unique.Handle[string] }

func (l skillIDs) empty() bool { return l == skillIDs{} }

// ids returns the list (nil when empty), in new memory.
func (l skillIDs) ids() []string {
	if l.empty() {
		return nil
	}
	var out []string
	for b := l.h.Value(); len(b) > 0; {
		n, k := binary.Uvarint([]byte(b[:min(len(b), binary.MaxVarintLen64)]))
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out
}

// hold queues p while the satellite is offline, dropping the oldest when the
// queue is full; it reports how many were dropped.
func (s *satState) hold(p pending, max int) (dropped int) {
	s.pending = append(s.pending, p)
	if over := len(s.pending) - max; over > 0 {
		s.pending = append(s.pending[:0], s.pending[over:]...)
		return over
	}
	return 0
}

// expired reports whether the satellite has been offline past grace.
func (s *satState) expired(now time.Time, grace time.Duration) bool {
	return !s.online && now.Sub(s.since) > grace
}
