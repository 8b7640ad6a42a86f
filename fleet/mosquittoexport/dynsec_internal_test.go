package mosquittoexport

import (
	"slices"
	"testing"

	"github.com/chorus-edge/chorus/broker"
)

func TestLiteralDenials(t *testing.T) {
	tests := []struct {
		name       string
		deny       []string
		allow      []string
		want, omit []string
	}{
		{"skill defaults", broker.SkillDenyTypes, nil,
			[]string{"ovos.skills.install", "ovos.skills.uninstall.failed", "skillmanager.deactivate", "mycroft.gui.available", "ovos.pip.install"}, nil},
		{"granted type", broker.SkillDenyTypes, []string{"ovos.skills.install"},
			[]string{"ovos.skills.uninstall"}, []string{"ovos.skills.install"}},
		{"granted pattern", broker.SkillDenyTypes, []string{"skillmanager.*"},
			[]string{"ovos.pip.install"}, []string{"skillmanager.rescan", "skillmanager.list"}},
		{"exact type", []string{"speak"}, nil, []string{"speak"}, []string{"ovos.pip.install"}},
		{"nothing denied", nil, nil, nil, []string{"ovos.pip.install"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := literalDenials(broker.Account{DenyTypes: tc.deny, AllowTypes: tc.allow})
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not denied; got %v", w, got)
				}
			}
			for _, o := range tc.omit {
				if slices.Contains(got, o) {
					t.Errorf("%s denied; got %v", o, got)
				}
			}
		})
	}
}
