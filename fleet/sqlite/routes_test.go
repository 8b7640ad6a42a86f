package sqlite_test

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, id := range []string{"sat", "sat2", "hub"} {
		if err := db.CreateDevice(ctx, &fleet.Device{ID: id, SecretHash: "h", SkillKey: make([]byte, ed25519.PublicKeySize)}); err != nil {
			t.Fatal(err)
		}
	}
	r := &fleet.Route{Satellite: "sat", Hub: "hub", BlacklistedSkills: []string{"b.skill", "a.skill", "a.skill"}}
	if err := db.PutRoute(ctx, r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.BlacklistedSkills, []string{"a.skill", "b.skill"}) || r.Allow == nil || r.CreatedAt.IsZero() {
		t.Fatalf("put = %+v", r)
	}
	r.Allow = []string{"speak"}
	if err := db.PutRoute(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetRoute(ctx, "sat")
	if err != nil || !reflect.DeepEqual(got.Allow, []string{"speak"}) {
		t.Fatalf("get = %+v, %v", got, err)
	}
	tests := []struct {
		name string
		r    fleet.Route
		code string
	}{
		{"unknown hub", fleet.Route{Satellite: "sat2", Hub: "ghost"}, fleet.ENOTFOUND},
		{"own hub", fleet.Route{Satellite: "hub", Hub: "hub"}, fleet.EINVALID},
		{"hub as satellite", fleet.Route{Satellite: "hub", Hub: "sat2"}, fleet.ECONFLICT},
		{"satellite as hub", fleet.Route{Satellite: "sat2", Hub: "sat"}, fleet.ECONFLICT},
		{"bad type", fleet.Route{Satellite: "sat2", Hub: "hub", Allow: []string{"a/b"}}, fleet.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := db.PutRoute(ctx, &tt.r); fleet.ErrorCode(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
	if err := db.PutRoute(ctx, &fleet.Route{Satellite: "sat2", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRoute(ctx, "sat2"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRoute(ctx, "sat2"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("delete twice: %v", err)
	}
	if err := db.DeleteDevice(ctx, "hub"); err != nil {
		t.Fatal(err)
	}
	if rs, err := db.ListRoutes(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("routes after the hub was removed = %v, %v", rs, err)
	}
}
