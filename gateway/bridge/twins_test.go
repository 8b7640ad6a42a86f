package bridge_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/bridge"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// TestTwinEveryRow twins each row once in each direction the mode allows,
// marks the twin, and never twins the twin again.
func TestTwinEveryRow(t *testing.T) {
	for _, row := range bridge.TwinTable {
		t.Run(row.Legacy, func(t *testing.T) {
			data := map[string]any{"skill_id": "a.skill"}
			ctx := map[string]any{"skill_id": "a.skill", "session": map[string]any{"session_id": "default"}}
			legacy := envelope.Message{Type: row.Legacy, Data: data, Context: ctx}
			v1 := envelope.Message{Type: row.V1, Data: data, Context: ctx}
			if _, ok := bridge.Twin(bridge.TwinsOff, legacy); ok {
				t.Error("off mode twinned")
			}
			for _, mode := range []bridge.TwinMode{bridge.TwinsLegacyToV1, bridge.TwinsBoth} {
				tw, ok := bridge.Twin(mode, legacy)
				if !ok || tw.Type != row.V1 || tw.Context[bridge.KeyTwin] != true {
					t.Fatalf("%s: twin of %s = %v %+v", mode, row.Legacy, ok, tw)
				}
				if _, again := bridge.Twin(bridge.TwinsBoth, tw); again {
					t.Errorf("%s: a twin was twinned again", mode)
				}
				if _, marked := legacy.Context[bridge.KeyTwin]; marked {
					t.Error("the original was marked")
				}
			}
			if _, ok := bridge.Twin(bridge.TwinsLegacyToV1, v1); ok {
				t.Error("legacy-to-v1 twinned a v1 name")
			}
			tw, ok := bridge.Twin(bridge.TwinsBoth, v1)
			if !ok || tw.Type != row.Legacy || tw.Context[bridge.KeyTwin] != true {
				t.Fatalf("both: twin of %s = %v %+v", row.V1, ok, tw)
			}
			if _, again := bridge.Twin(bridge.TwinsBoth, tw); again {
				t.Error("a twin was twinned again")
			}
		})
	}
}

func TestTwinTableIsABijection(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range bridge.TwinTable {
		for _, n := range []string{r.Legacy, r.V1} {
			if seen[n] {
				t.Errorf("%s appears twice", n)
			}
			seen[n] = true
		}
	}
}

func TestTwinDetachSkillGuard(t *testing.T) {
	tests := []struct {
		name, typ, data, ctx string
		want                 bool
	}{
		{"self deregistration", "detach_skill", `{"skill_id":"a"}`, `{"skill_id":"a"}`, true},
		{"self deregistration v1", "ovos.skill.deregister", `{"skill_id":"a"}`, `{"skill_id":"a"}`, true},
		{"cross-skill", "ovos.skill.deregister", `{"skill_id":"b"}`, `{"skill_id":"a"}`, false},
		{"cross-skill legacy", "detach_skill", `{"skill_id":"b"}`, `{"skill_id":"a"}`, false},
		{"malformed: no payload skill", "ovos.skill.deregister", `{}`, `{"skill_id":"a"}`, false},
		{"no context skill", "detach_skill", `{"skill_id":"a"}`, `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg(t, `{"type":"`+tt.typ+`","data":`+tt.data+`,"context":`+tt.ctx+`}`)
			if _, ok := bridge.Twin(bridge.TwinsBoth, m); ok != tt.want {
				t.Fatalf("twinned = %v, want %v", ok, tt.want)
			}
		})
	}
}

func TestTwinSkillsListTransform(t *testing.T) {
	legacy := msg(t, `{"type":"mycroft.skills.list","data":{"b.skill":{"active":false,"id":"b.skill"},"a.skill":{"active":true,"id":"a.skill"}}}`)
	tw, ok := bridge.Twin(bridge.TwinsLegacyToV1, legacy)
	if !ok || tw.Type != "ovos.skills.list.response" {
		t.Fatalf("twin = %v %+v", ok, tw)
	}
	want := `{"skills":[{"active":true,"skill_id":"a.skill"},{"active":false,"skill_id":"b.skill"}]}`
	if got := canon(t, tw.Data); got != want {
		t.Fatalf("data = %s, want %s", got, want)
	}
	v1 := msg(t, `{"type":"ovos.skills.list.response","data":{"skills":[{"skill_id":"a.skill","active":true},{"skill_id":"b.skill"},{"active":true}]}}`)
	back, ok := bridge.Twin(bridge.TwinsBoth, v1)
	want = `{"a.skill":{"active":true,"id":"a.skill"},"b.skill":{"active":true,"id":"b.skill"}}`
	if !ok || back.Type != "mycroft.skills.list" || canon(t, back.Data) != want {
		t.Fatalf("twin = %v %s %s", ok, back.Type, canon(t, back.Data))
	}
}

func TestParseTwinMode(t *testing.T) {
	for in, want := range map[string]bridge.TwinMode{"": bridge.TwinsOff, "off": bridge.TwinsOff, "legacy-to-v1": bridge.TwinsLegacyToV1, "both": bridge.TwinsBoth} {
		if got, err := bridge.ParseTwinMode(in); err != nil || got != want {
			t.Errorf("ParseTwinMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := bridge.ParseTwinMode("v1-to-legacy"); err == nil {
		t.Error("unknown mode accepted")
	}
}
