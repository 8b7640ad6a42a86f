package skillmanager

import (
	"encoding/json"
	"testing"
)

// The skills payload has exactly the keys of ARCHITECTURE §3.
func TestSnapshotShape(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "a", reqs: "internet"})
	m := e.start()
	b, err := json.Marshal(m.Snapshot().Skills)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	json.Unmarshal(b, &top)
	for _, k := range []string{"applied_version", "manifest_digest", "updated_at", "skills"} {
		if _, ok := top[k]; !ok {
			t.Errorf("skills payload lacks %q: %s", k, b)
		}
	}
	var skills []map[string]any
	json.Unmarshal(top["skills"], &skills)
	if len(skills) != 1 {
		t.Fatalf("skills = %s", top["skills"])
	}
	for _, k := range []string{"id", "version", "state", "active", "waiting_for", "degraded", "requirements",
		"managed", "error", "attempts", "next_retry", "since"} {
		if _, ok := skills[0][k]; !ok {
			t.Errorf("skill lacks %q: %v", k, skills[0])
		}
	}
	if skills[0]["state"] != "waiting" || jsonString(skills[0]["waiting_for"]) != `["internet"]` || skills[0]["next_retry"] != nil {
		t.Errorf("skill = %v", skills[0])
	}
	c, _ := json.Marshal(m.Snapshot().Connectivity)
	var conn map[string]any
	json.Unmarshal(c, &conn)
	for _, k := range []string{"network", "internet", "gui", "changed_at", "source"} {
		if _, ok := conn[k]; !ok {
			t.Errorf("connectivity lacks %q: %s", k, c)
		}
	}
}
