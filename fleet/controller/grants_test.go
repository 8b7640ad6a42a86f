package controller_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// TestSkillGrantsReachTheBroker checks docs/security.md, "Skill grants": a
// fleet-wide grant lets the skill emit the granted type on every device, a
// device-scoped one only on that device, other skills stay refused, removing
// a grant takes it back on the next publish, and a grant of a type that is
// not restricted is refused and stores nothing.
func TestSkillGrantsReachTheBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pi1, pi2 := e.addDevice("pi-1"), e.addDevice("pi-2")
	skill := func(creds configs.AgentCredentials, name string) *brokertest.Client {
		t.Helper()
		key, err := creds.PrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return brokertest.MustConnect(t, e.b.Addr(), skillcred.Username(creds.Device, name),
			skillcred.Mint(key, creds.KeyVersion, creds.Device, name), brokertest.ConnectOptions{ClientID: creds.Device + "-" + name})
	}
	inst1, inst2, other1 := skill(pi1, "installer"), skill(pi2, "installer"), skill(pi1, "other")
	install := func(c *brokertest.Client, device, typ string) byte {
		return c.Pub(t, "chorus/v1/"+device+"/bus/"+typ, []byte(`{"type":"`+typ+`","data":{},"context":{}}`), false)
	}
	expect := func(what string, got, want byte) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: reason 0x%02x, want 0x%02x", what, got, want)
		}
	}
	expect("no grant yet", install(inst1, "pi-1", "ovos.skills.install"), 0x87)

	if _, err := e.ctl.PutSkillGrant(ctx, "test", &fleet.SkillGrant{Skill: "installer", Allow: []string{"ovos.skills.install"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.PutSkillGrant(ctx, "test", &fleet.SkillGrant{Skill: "installer", Device: "pi-1", Allow: []string{"skillmanager.rescan"}}); err != nil {
		t.Fatal(err)
	}
	expect("fleet-wide grant on pi-1", install(inst1, "pi-1", "ovos.skills.install"), 0)
	expect("fleet-wide grant on pi-2", install(inst2, "pi-2", "ovos.skills.install"), 0)
	expect("device grant on pi-1", install(inst1, "pi-1", "skillmanager.rescan"), 0)
	expect("device grant does not reach pi-2", install(inst2, "pi-2", "skillmanager.rescan"), 0x87)
	expect("another skill", install(other1, "pi-1", "ovos.skills.install"), 0x87)
	expect("a type not granted", install(inst1, "pi-1", "ovos.pip.install"), 0x87)

	_, err := e.ctl.PutSkillGrant(ctx, "test", &fleet.SkillGrant{Skill: "installer", Allow: []string{"speak"}})
	if !errors.Is(err, fleet.ErrInvalid) {
		t.Fatalf("grant of an unrestricted type: %v, want invalid", err)
	}
	if gs, _ := e.ctl.ListSkillGrants(ctx); len(gs) != 2 || gs[0].Allow[0] != "ovos.skills.install" {
		t.Fatalf("a refused grant changed the grants: %+v", gs)
	}

	if err := e.ctl.RemoveSkillGrant(ctx, "test", "installer", ""); err != nil {
		t.Fatal(err)
	}
	expect("after removing the fleet-wide grant", install(inst1, "pi-1", "ovos.skills.install"), 0x87)
	expect("the device grant stays", install(inst1, "pi-1", "skillmanager.rescan"), 0)
}
