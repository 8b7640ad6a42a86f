package sqlite_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// TestSkillGrants checks the grant rows: put normalises and replaces, a
// device-scoped grant needs its device and goes with it, the fleet-wide and
// device grants of one skill are separate rows, bad input changes nothing.
func TestSkillGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateDevice(ctx, &fleet.Device{ID: "pi-1", SecretHash: "h", SkillKey: make([]byte, ed25519.PublicKeySize)}); err != nil {
		t.Fatal(err)
	}

	all := &fleet.SkillGrant{Skill: "installer", Allow: []string{"ovos.skills.uninstall*", "ovos.skills.install*", "ovos.skills.install*"}}
	if err := db.PutSkillGrant(ctx, all); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ovos.skills.install*", "ovos.skills.uninstall*"}; !reflect.DeepEqual(all.Allow, want) || all.CreatedAt.IsZero() {
		t.Fatalf("put = %+v, want allow %v", all, want)
	}
	one := &fleet.SkillGrant{Skill: "installer", Device: "pi-1", Allow: []string{"skillmanager.rescan"}}
	if err := db.PutSkillGrant(ctx, one); err != nil {
		t.Fatal(err)
	}
	all.Allow = []string{"ovos.pip.*"}
	if err := db.PutSkillGrant(ctx, all); err != nil {
		t.Fatal(err)
	}
	gs, err := db.ListSkillGrants(ctx)
	if err != nil || len(gs) != 2 || gs[0].Device != "" || !reflect.DeepEqual(gs[0].Allow, []string{"ovos.pip.*"}) || gs[1].Device != "pi-1" {
		t.Fatalf("list = %+v, %v", gs, err)
	}

	bad := []*fleet.SkillGrant{
		{Skill: "installer", Device: "pi-9", Allow: []string{"x"}},       // unknown device
		{Skill: "../x", Allow: []string{"x"}},                            // bad skill id
		{Skill: "installer", Allow: nil},                                 // nothing granted
		{Skill: "installer", Allow: []string{"a/b"}},                     // not a topic level
		{Skill: "installer", Device: "Bad Device", Allow: []string{"x"}}, // bad device id
	}
	for _, g := range bad {
		if err := db.PutSkillGrant(ctx, g); err == nil {
			t.Errorf("put %+v: accepted", g)
		}
	}
	if err := db.DeleteSkillGrant(ctx, "nobody", ""); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("delete unknown grant: %v, want not found", err)
	}
	if after, _ := db.ListSkillGrants(ctx); len(after) != 2 {
		t.Fatalf("bad input changed the grants: %+v", after)
	}

	if err := db.DeleteDevice(ctx, "pi-1"); err != nil {
		t.Fatal(err)
	}
	gs, _ = db.ListSkillGrants(ctx)
	if len(gs) != 1 || gs[0].Device != "" {
		t.Fatalf("after removing pi-1: %+v, want only the fleet-wide grant", gs)
	}
	if err := db.DeleteSkillGrant(ctx, "installer", ""); err != nil {
		t.Fatal(err)
	}
	if gs, _ := db.ListSkillGrants(ctx); len(gs) != 0 {
		t.Fatalf("after delete: %+v", gs)
	}
}
