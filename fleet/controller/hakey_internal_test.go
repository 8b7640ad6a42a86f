package controller

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet/hadiscovery"
)

// haInputKey stands for the config's content: equal inputs give equal keys,
// and every field Build reads changes it, with no two fields able to trade
// bytes.
func TestHAInputKey(t *testing.T) {
	t.Parallel()
	base := hadiscovery.Input{Prefix: "homeassistant", Device: "pi", AgentVersion: "1", ChorusVersion: "2",
		Skills: []hadiscovery.Skill{{ID: "a.b", Title: "A", Managed: true}}}
	if haInputKey(base) != haInputKey(base) {
		t.Fatal("the same input gave two keys")
	}
	variants := map[string]func(*hadiscovery.Input){
		"prefix":         func(in *hadiscovery.Input) { in.Prefix = "ha" },
		"device":         func(in *hadiscovery.Input) { in.Device = "pi2" },
		"name":           func(in *hadiscovery.Input) { in.Name = "Kitchen" },
		"agent version":  func(in *hadiscovery.Input) { in.AgentVersion = "1.1" },
		"chorus version": func(in *hadiscovery.Input) { in.ChorusVersion = "3" },
		"gateway":        func(in *hadiscovery.Input) { in.Gateway = "gw" },
		"skill title":    func(in *hadiscovery.Input) { in.Skills[0].Title = "B" },
		"skill managed":  func(in *hadiscovery.Input) { in.Skills[0].Managed = false },
		"skill added":    func(in *hadiscovery.Input) { in.Skills = append(in.Skills, hadiscovery.Skill{ID: "c"}) },
		"no skills":      func(in *hadiscovery.Input) { in.Skills = nil },
		"bytes moved":    func(in *hadiscovery.Input) { in.AgentVersion, in.ChorusVersion = "12", "" },
		"skill id moved": func(in *hadiscovery.Input) { in.Skills[0].ID, in.Skills[0].Title = "a.bA", "" },
	}
	for name, change := range variants {
		in := base
		in.Skills = append([]hadiscovery.Skill(nil), base.Skills...)
		change(&in)
		if haInputKey(in) == haInputKey(base) {
			t.Errorf("%s: same key as the base input", name)
		}
	}
}
