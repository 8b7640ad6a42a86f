package broker_test

import (
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// TestSkillGrant checks the promise of docs/security.md, "Skill grants": a
// grant lifts the management-type ban for the named skill only, only for the
// types it names, and a new table without the grant takes it back from the
// next publish on, without a reconnect.
func TestSkillGrant(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	granted := dev.Account
	granted.SkillGrants = map[string][]string{"installer": {"ovos.skills.install*"}}
	b := brokertest.Start(t, brokertest.Unlimited(), granted)

	connect := func(skill string) *brokertest.Client {
		return brokertest.MustConnect(t, b.Addr(), skillcred.Username("pi-1", skill),
			skillcred.Mint(dev.Key, 1, "pi-1", skill), brokertest.ConnectOptions{ClientID: skillcred.Username("pi-1", skill)})
	}
	installer, other := connect("installer"), connect("other")
	msg := func(skill, topic string) []byte {
		typ := topic[strings.LastIndex(topic, "/")+1:]
		return []byte(`{"type":"` + typ + `","data":{},"context":{"skill_id":"` + skill + `"}}`)
	}

	cases := []struct {
		name   string
		c      *brokertest.Client
		skill  string
		topic  string
		reason byte
	}{
		{"granted type", installer, "installer", "chorus/v1/pi-1/bus/ovos.skills.install", 0},
		{"granted prefix", installer, "installer", "chorus/v1/pi-1/bus/ovos.skills.install.failed", 0},
		{"other restricted type", installer, "installer", "chorus/v1/pi-1/bus/ovos.skills.uninstall", 0x87},
		{"other restricted family", installer, "installer", "chorus/v1/pi-1/bus/skillmanager.rescan", 0x87},
		{"plain type", installer, "installer", "chorus/v1/pi-1/bus/speak", 0},
		{"another skill, same type", other, "other", "chorus/v1/pi-1/bus/ovos.skills.install", 0x87},
		{"grant never opens state topics", installer, "installer", "chorus/v1/pi-1/availability", 0x87},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Pub(t, tc.topic, msg(tc.skill, tc.topic), false); got != tc.reason {
				t.Fatalf("publish %s as %s: reason 0x%02x, want 0x%02x", tc.topic, tc.skill, got, tc.reason)
			}
		})
	}

	// Revoking: the same device without the grant.
	table, err := broker.NewTable(dev.Account)
	if err != nil {
		t.Fatal(err)
	}
	b.SetTable(table)
	if got := installer.Pub(t, "chorus/v1/pi-1/bus/ovos.skills.install", msg("installer", "chorus/v1/pi-1/bus/ovos.skills.install"), false); got != 0x87 {
		t.Fatalf("after revoking the grant: reason 0x%02x, want 0x87", got)
	}
}

func TestRestrictedForSkills(t *testing.T) {
	cases := map[string]bool{
		"ovos.skills.install":          true,
		"ovos.skills.install*":         true,
		"ovos.skills.uninstall.failed": true,
		"skillmanager.*":               true,
		"skillmanager.rescan":          true,
		"mycroft.gui.screen.close":     true,
		"ovos.skills.*":                false, // broader than the restricted families
		"ovos.skills.list":             false,
		"speak":                        false,
		"*":                            false,
		"mycroft.network":              false,
	}
	for typ, want := range cases {
		if got := broker.RestrictedForSkills(typ); got != want {
			t.Errorf("RestrictedForSkills(%q) = %v, want %v", typ, got, want)
		}
	}
}
