package sqlite_test

import (
	"slices"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func TestIntegrations(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	ha := &fleet.Integration{Name: "homeassistant", SecretHash: "sha256:x", Allow: []string{"speak", "mycroft.stop", "speak"}}
	if err := db.CreateIntegration(ctx, ha); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateIntegration(ctx, &fleet.Integration{Name: "nodered", SecretHash: "sha256:y"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetIntegration(ctx, "homeassistant")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Allow, []string{"mycroft.stop", "speak"}) || got.SecretHash != "sha256:x" || !got.CreatedAt.Equal(c.Now()) {
		t.Errorf("GetIntegration = %+v", got)
	}
	list, err := db.ListIntegrations(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "homeassistant" || list[1].Allow == nil {
		t.Fatalf("ListIntegrations = %v, %v", list, err)
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"duplicate", func() error { return db.CreateIntegration(ctx, &fleet.Integration{Name: "nodered", SecretHash: "h"}) }, fleet.ECONFLICT},
		{"invalid name", func() error { return db.CreateIntegration(ctx, &fleet.Integration{Name: "a:b", SecretHash: "h"}) }, fleet.EINVALID},
		{"invalid allow", func() error {
			return db.CreateIntegration(ctx, &fleet.Integration{Name: "x", SecretHash: "h", Allow: []string{"a/b"}})
		}, fleet.EINVALID},
		{"no hash", func() error { return db.CreateIntegration(ctx, &fleet.Integration{Name: "x"}) }, fleet.EINVALID},
		{"get missing", func() error { _, err := db.GetIntegration(ctx, "x"); return err }, fleet.ENOTFOUND},
		{"delete", func() error { return db.DeleteIntegration(ctx, "nodered") }, ""},
		{"delete again", func() error { return db.DeleteIntegration(ctx, "nodered") }, fleet.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
	}
}

func TestOperators(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	// Operator, integration and device names are separate namespaces.
	mustDevice(t, db, "alice")
	if err := db.CreateIntegration(ctx, &fleet.Integration{Name: "alice", SecretHash: "h"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"create", func() error { return db.CreateOperator(ctx, &fleet.Operator{Name: "alice", SecretHash: "h"}) }, ""},
		{"duplicate", func() error { return db.CreateOperator(ctx, &fleet.Operator{Name: "alice", SecretHash: "h"}) }, fleet.ECONFLICT},
		{"invalid", func() error { return db.CreateOperator(ctx, &fleet.Operator{Name: "", SecretHash: "h"}) }, fleet.EINVALID},
		{"get", func() error {
			o, err := db.GetOperator(ctx, "alice")
			if err == nil && o.SecretHash != "h" {
				t.Errorf("operator = %+v", o)
			}
			return err
		}, ""},
		{"list", func() error {
			os, err := db.ListOperators(ctx)
			if err == nil && len(os) != 1 {
				t.Errorf("operators = %v", os)
			}
			return err
		}, ""},
		{"get missing", func() error { _, err := db.GetOperator(ctx, "bob"); return err }, fleet.ENOTFOUND},
		{"delete", func() error { return db.DeleteOperator(ctx, "alice") }, ""},
		{"delete missing", func() error { return db.DeleteOperator(ctx, "alice") }, fleet.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
	}
}
