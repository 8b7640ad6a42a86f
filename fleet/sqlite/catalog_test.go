package sqlite_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func TestCatalog(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	v1 := mustPublish(t, db, "weather", "1.0.0")
	if !v1.PublishedAt.Equal(c.Now()) || v1.Title != "weather" || string(v1.Manifest) != `{"name":"weather"}` ||
		len(v1.Requirements) != 1 {
		t.Errorf("published = %+v", v1)
	}
	c.Advance(time.Minute)
	// "Latest" is the most recently published, not the highest version.
	mustPublish(t, db, "weather", "2.0.0")
	c.Advance(time.Minute)
	mustPublish(t, db, "weather", "1.5.0")
	mustPublish(t, db, "timer", "0.1.0")

	// Identical re-publication is idempotent: same stored version, same time.
	again, err := db.PublishVersion(ctx, newVersion("weather", "1.0.0"))
	if err != nil || !again.PublishedAt.Equal(v1.PublishedAt) {
		t.Fatalf("republish = %+v, %v", again, err)
	}

	latest, err := db.LatestVersion(ctx, "weather")
	if err != nil || latest.Version != "1.5.0" {
		t.Fatalf("LatestVersion = %+v, %v", latest, err)
	}
	skills, err := db.ListSkills(ctx)
	if err != nil || len(skills) != 2 || skills[0].SkillID != "timer" || skills[1].Version != "1.5.0" {
		t.Fatalf("ListSkills = %v, %v", skills, err)
	}
	vs, err := db.ListVersions(ctx, "weather")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, v := range vs {
		order = append(order, v.Version)
	}
	if strings.Join(order, " ") != "1.5.0 2.0.0 1.0.0" {
		t.Errorf("ListVersions order = %v", order)
	}
	art, err := db.ArtifactBySHA256(ctx, v1.SHA256)
	if err != nil || art.SkillID != "weather" || art.Version != "1.0.0" {
		t.Fatalf("ArtifactBySHA256 = %+v, %v", art, err)
	}

	tampered := newVersion("weather", "1.0.0")
	tampered.SHA256 = digest("something else")
	bad := newVersion("weather", "3.0.0")
	bad.Manifest = []byte(`[]`)
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"same version other bytes", func() error { _, err := db.PublishVersion(ctx, tampered); return err }, fleet.ECONFLICT},
		{"invalid skill", func() error { _, err := db.PublishVersion(ctx, newVersion("-x", "1")); return err }, fleet.EINVALID},
		{"invalid version", func() error { _, err := db.PublishVersion(ctx, newVersion("x", "1 0")); return err }, fleet.EINVALID},
		{"manifest not object", func() error { _, err := db.PublishVersion(ctx, bad); return err }, fleet.EINVALID},
		{"zero size", func() error {
			v := newVersion("x", "1")
			v.Size = 0
			_, err := db.PublishVersion(ctx, v)
			return err
		}, fleet.EINVALID},
		{"get missing version", func() error { _, err := db.GetVersion(ctx, "weather", "9"); return err }, fleet.ENOTFOUND},
		{"get ok", func() error { _, err := db.GetVersion(ctx, "weather", "2.0.0"); return err }, ""},
		{"latest unknown", func() error { _, err := db.LatestVersion(ctx, "nope"); return err }, fleet.ENOTFOUND},
		{"versions unknown", func() error { _, err := db.ListVersions(ctx, "nope"); return err }, fleet.ENOTFOUND},
		{"artifact unknown", func() error { _, err := db.ArtifactBySHA256(ctx, digest("nope")); return err }, fleet.ENOTFOUND},
		{"artifact invalid", func() error { _, err := db.ArtifactBySHA256(ctx, "../../etc/passwd"); return err }, fleet.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
	}
}
