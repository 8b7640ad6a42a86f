package bridge

import (
	"fmt"
	"sort"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// TwinMode says which topic migration twins a device bus gets (BUS.md §5).
type TwinMode string

const (
	TwinsOff        TwinMode = "off"          // none (the default)
	TwinsLegacyToV1 TwinMode = "legacy-to-v1" // a predecessor name also appears under its v1 name
	TwinsBoth       TwinMode = "both"         // and a v1 name also under its predecessor name
)

// ParseTwinMode reads a mode; "" is TwinsOff.
func ParseTwinMode(s string) (TwinMode, error) {
	switch m := TwinMode(s); m {
	case "":
		return TwinsOff, nil
	case TwinsOff, TwinsLegacyToV1, TwinsBoth:
		return m, nil
	}
	return "", fmt.Errorf("twin mode %q: want off, legacy-to-v1 or both", s)
}

// TwinRow is one predecessor ↔ v1 pair of seeds/001 §5.7. A row is a rename
// unless it has transforms; Guard, when set, must hold for either direction.
type TwinRow struct {
	Legacy, V1 string
	ToV1       func(data map[string]any) map[string]any // nil: data unchanged
	ToLegacy   func(data map[string]any) map[string]any // nil: data unchanged
	Guard      func(m envelope.Message) bool
}

// TwinTable is the mapping (seeds/001 §5.2, §5.7; docs/topics.md). Rows whose
// payload changes shape with no mechanical transform (register_intent,
// padatious:*, detach_intent, enable/disable_intent, mycroft.skills.loaded,
// question:query, the GUI and homescreen rows) and topics built from
// identifiers (<skill_id>.stop.ping …) are not twinned.
var TwinTable = []TwinRow{
	// Utterance lifecycle (PIPELINE-1).
	{Legacy: "recognizer_loop:utterance", V1: "ovos.utterance.handle"},
	{Legacy: "speak", V1: "ovos.utterance.speak"},
	{Legacy: "complete_intent_failure", V1: "ovos.intent.unmatched"},
	{Legacy: "mycroft.skill.handler.start", V1: "ovos.intent.handler.start"},
	{Legacy: "mycroft.skill.handler.complete", V1: "ovos.intent.handler.complete"},
	{Legacy: "mycroft.skill.handler.error", V1: "ovos.intent.handler.error"},
	// Registration (INTENT-4): safe only as a self-deregistration (§5.7).
	{Legacy: "detach_skill", V1: "ovos.skill.deregister", Guard: selfDeregistration},
	// Skill manager list: request, and the map ↔ array answer.
	{Legacy: "skillmanager.list", V1: "ovos.skills.list"},
	{Legacy: "mycroft.skills.list", V1: "ovos.skills.list.response", ToV1: skillsMapToArray, ToLegacy: skillsArrayToMap},
	// Poll families with static predecessor names (STOP-1, CONVERSE-1, FALLBACK-1).
	{Legacy: "skill.stop.pong", V1: "ovos.stop.pong"},
	{Legacy: "skill.converse.pong", V1: "ovos.converse.pong"},
	{Legacy: "ovos.skills.fallback.ping", V1: "ovos.fallback.ping"},
	{Legacy: "ovos.skills.fallback.pong", V1: "ovos.fallback.pong"},
	{Legacy: "ovos.skills.fallback.register", V1: "ovos.fallback.register"},
	{Legacy: "ovos.skills.fallback.deregister", V1: "ovos.fallback.deregister"},
	// Listener (AUDIO-IN-1) and audio output (AUDIO-1).
	{Legacy: "recognizer_loop:record_begin", V1: "ovos.listener.record.started"},
	{Legacy: "recognizer_loop:record_end", V1: "ovos.listener.record.ended"},
	{Legacy: "recognizer_loop:sleep", V1: "ovos.listener.sleep"},
	{Legacy: "recognizer_loop:wake_up", V1: "ovos.listener.wake"},
	{Legacy: "mycroft.awoken", V1: "ovos.listener.awoken"},
	{Legacy: "recognizer_loop:wakeword", V1: "ovos.listener.wakeword"},
	{Legacy: "recognizer_loop:speech.recognition.unknown", V1: "ovos.stt.failed"},
	{Legacy: "recognizer_loop:audio_output_start", V1: "ovos.audio.output.started"},
	{Legacy: "recognizer_loop:audio_output_end", V1: "ovos.audio.output.ended"},
	{Legacy: "enclosure.mouth.viseme_list", V1: "ovos.audio.output.visemes"},
}

// twinIndex maps a type to its row and whether the type is the legacy name.
type twinEntry struct {
	row    *TwinRow
	legacy bool
}

var twinIndex = func() map[string]twinEntry {
	idx := make(map[string]twinEntry, 2*len(TwinTable))
	for i := range TwinTable {
		r := &TwinTable[i]
		idx[r.Legacy] = twinEntry{r, true}
		idx[r.V1] = twinEntry{r, false}
	}
	return idx
}()

// Twin returns the twin of m under mode: a copy under the row's other name,
// data transformed when the row says so, context a deep copy carrying
// KeyTwin: true. ok is false when m is itself a twin (a twin is never twinned
// again), has no row, goes the way the mode does not, or fails the row's
// guard. m is not modified.
func Twin(mode TwinMode, m envelope.Message) (twin envelope.Message, ok bool) {
	if mode != TwinsLegacyToV1 && mode != TwinsBoth || isTwin(m) {
		return envelope.Message{}, false
	}
	e, found := twinIndex[m.Type]
	if !found || !e.legacy && mode != TwinsBoth {
		return envelope.Message{}, false
	}
	if e.row.Guard != nil && !e.row.Guard(m) {
		return envelope.Message{}, false
	}
	out := m.Clone()
	out.Type, out.Data = e.row.V1, transform(e.row.ToV1, out.Data)
	if !e.legacy {
		out.Type, out.Data = e.row.Legacy, transform(e.row.ToLegacy, m.Clone().Data)
	}
	if out.Context == nil {
		out.Context = map[string]any{}
	}
	out.Context[KeyTwin] = true
	return out, true
}

func transform(f func(map[string]any) map[string]any, data map[string]any) map[string]any {
	if data == nil {
		data = map[string]any{}
	}
	if f == nil {
		return data
	}
	return f(data)
}

// selfDeregistration: data.skill_id names the skill in context.skill_id, so
// the predecessor handlers (which read the context) and the v1 ones (which
// read the payload) remove the same skill (seeds/001 §5.7 detach_skill).
func selfDeregistration(m envelope.Message) bool {
	d, _ := m.Data[KeySkillID].(string)
	c, _ := m.Context[KeySkillID].(string)
	return d != "" && d == c
}

// skillsMapToArray: mycroft.skills.list {id: {"active", "id"}} →
// ovos.skills.list.response {"skills": [{"skill_id", "active"}]}, sorted by id.
func skillsMapToArray(data map[string]any) map[string]any {
	ids := make([]string, 0, len(data))
	for id := range data {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	list := make([]any, 0, len(ids))
	for _, id := range ids {
		entry := map[string]any{KeySkillID: id}
		if v, ok := data[id].(map[string]any); ok {
			if a, ok := v["active"].(bool); ok {
				entry["active"] = a
			}
		}
		list = append(list, entry)
	}
	return map[string]any{"skills": list}
}

// skillsArrayToMap is the inverse; an entry without a string skill_id is
// skipped, a missing active reads as true.
func skillsArrayToMap(data map[string]any) map[string]any {
	out := map[string]any{}
	list, _ := data["skills"].([]any)
	for _, e := range list {
		entry, _ := e.(map[string]any)
		id, _ := entry[KeySkillID].(string)
		if id == "" {
			continue
		}
		active, ok := entry["active"].(bool)
		if !ok {
			active = true
		}
		out[id] = map[string]any{"active": active, "id": id}
	}
	return out
}
