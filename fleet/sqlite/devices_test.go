package sqlite_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func TestDeviceCRUD(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	d := mustDevice(t, db, "pi-kitchen", "kitchen", "downstairs", "kitchen")
	if want := []string{"downstairs", "kitchen"}; !slices.Equal(d.Tags, want) {
		t.Errorf("tags = %v, want %v", d.Tags, want)
	}
	if d.KeyVersion != 1 || !d.CreatedAt.Equal(c.Now()) {
		t.Errorf("created = %+v", d)
	}
	got, err := db.GetDevice(ctx, "pi-kitchen")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != d.ID || got.SecretHash != d.SecretHash || !bytes.Equal(got.SkillKey, d.SkillKey) ||
		!slices.Equal(got.Tags, d.Tags) || !got.CreatedAt.Equal(d.CreatedAt) || got.Online || got.DesiredVersion != 0 {
		t.Errorf("GetDevice = %+v, want %+v", got, d)
	}
	mustDevice(t, db, "pi-bedroom", "upstairs")
	mustDevice(t, db, "pi-attic")

	online := true
	tests := []struct {
		name   string
		filter fleet.DeviceFilter
		want   []string
	}{
		{"all by id", fleet.DeviceFilter{}, []string{"pi-attic", "pi-bedroom", "pi-kitchen"}},
		{"by tag", fleet.DeviceFilter{Tag: "kitchen"}, []string{"pi-kitchen"}},
		{"unknown tag", fleet.DeviceFilter{Tag: "garage"}, nil},
		{"online", fleet.DeviceFilter{Online: &online}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := db.ListDevices(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
			// ListDeviceIDs selects the same devices, in the same order.
			only, err := db.ListDeviceIDs(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(only, tt.want) {
				t.Errorf("ListDeviceIDs = %v, want %v", only, tt.want)
			}
		})
	}
	ds, _ := db.ListDevices(ctx, fleet.DeviceFilter{})
	if !slices.Equal(ds[2].Tags, []string{"downstairs", "kitchen"}) || len(ds[0].Tags) != 0 || ds[0].Tags == nil {
		t.Errorf("list tags: %v / %v", ds[2].Tags, ds[0].Tags)
	}

	if err := db.DeleteDevice(ctx, "pi-attic"); err != nil {
		t.Fatal(err)
	}
	_, err = db.GetDevice(ctx, "pi-attic")
	wantCode(t, err, fleet.ENOTFOUND)
}

func TestDeviceErrors(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	noKey := newDevice("pi9")
	noKey.SkillKey = []byte("short")
	noHash := newDevice("pi9")
	noHash.SecretHash = ""
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"create duplicate", func() error { return db.CreateDevice(ctx, newDevice("pi1")) }, fleet.ECONFLICT},
		{"create invalid id", func() error { return db.CreateDevice(ctx, newDevice("pi 1")) }, fleet.EINVALID},
		{"create reserved id", func() error { return db.CreateDevice(ctx, newDevice("gateway")) }, fleet.EINVALID},
		{"create invalid tag", func() error { return db.CreateDevice(ctx, newDevice("pi2", "a/b")) }, fleet.EINVALID},
		{"create bad key", func() error { return db.CreateDevice(ctx, noKey) }, fleet.EINVALID},
		{"create no hash", func() error { return db.CreateDevice(ctx, noHash) }, fleet.EINVALID},
		{"get missing", func() error { _, err := db.GetDevice(ctx, "nope"); return err }, fleet.ENOTFOUND},
		{"get invalid", func() error { _, err := db.GetDevice(ctx, "../x"); return err }, fleet.EINVALID},
		{"list invalid tag", func() error { _, err := db.ListDevices(ctx, fleet.DeviceFilter{Tag: "-x"}); return err }, fleet.EINVALID},
		{"list ids invalid tag", func() error { _, err := db.ListDeviceIDs(ctx, fleet.DeviceFilter{Tag: "-x"}); return err }, fleet.EINVALID},
		{"delete missing", func() error { return db.DeleteDevice(ctx, "nope") }, fleet.ENOTFOUND},
		{"tag missing device", func() error { _, err := db.AddDeviceTag(ctx, "nope", "k"); return err }, fleet.ENOTFOUND},
		{"tag invalid", func() error { _, err := db.AddDeviceTag(ctx, "pi1", ""); return err }, fleet.EINVALID},
		{"set tags invalid", func() error { _, err := db.SetDeviceTags(ctx, "pi1", []string{"ok", "not ok"}); return err }, fleet.EINVALID},
		{"rotate missing", func() error { _, err := db.RotateDevice(ctx, "nope", "h", key(2)); return err }, fleet.ENOTFOUND},
		{"rotate bad key", func() error { _, err := db.RotateDevice(ctx, "pi1", "h", nil); return err }, fleet.EINVALID},
		{"presence missing", func() error { _, err := db.UpdatePresence(ctx, "nope", fleet.Presence{}); return err }, fleet.ENOTFOUND},
		{"presence huge session", func() error {
			_, err := db.UpdatePresence(ctx, "pi1", fleet.Presence{Session: 1 << 63})
			return err
		}, fleet.EINVALID},
		{"birth missing", func() error { _, err := db.UpdateBirth(ctx, "nope", fleet.Birth{}); return err }, fleet.ENOTFOUND},
		{"connectivity missing", func() error { return db.UpdateConnectivity(ctx, "nope", json.RawMessage(`{}`)) }, fleet.ENOTFOUND},
		{"connectivity not object", func() error { return db.UpdateConnectivity(ctx, "pi1", json.RawMessage(`"x"`)) }, fleet.EINVALID},
		{"reported missing", func() error { return db.UpdateReported(ctx, "nope", json.RawMessage(`{}`), 1) }, fleet.ENOTFOUND},
		{"reported negative", func() error { return db.UpdateReported(ctx, "pi1", json.RawMessage(`{}`), -1) }, fleet.EINVALID},
		{"reported too big", func() error {
			return db.UpdateReported(ctx, "pi1", append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), fleet.MaxStatePayload)...), `"}`...), 1)
		}, fleet.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
	}
}

func TestDeviceTagsAndRotate(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustDevice(t, db, "pi1", "kitchen")
	c.Advance(time.Minute)
	steps := []struct {
		name string
		do   func() (*fleet.Device, error)
		want []string
	}{
		{"add", func() (*fleet.Device, error) { return db.AddDeviceTag(ctx, "pi1", "upstairs") }, []string{"kitchen", "upstairs"}},
		{"add again", func() (*fleet.Device, error) { return db.AddDeviceTag(ctx, "pi1", "upstairs") }, []string{"kitchen", "upstairs"}},
		{"remove", func() (*fleet.Device, error) { return db.RemoveDeviceTag(ctx, "pi1", "kitchen") }, []string{"upstairs"}},
		{"remove absent", func() (*fleet.Device, error) { return db.RemoveDeviceTag(ctx, "pi1", "kitchen") }, []string{"upstairs"}},
		{"set", func() (*fleet.Device, error) { return db.SetDeviceTags(ctx, "pi1", []string{"b", "a", "b"}) }, []string{"a", "b"}},
		{"set none", func() (*fleet.Device, error) { return db.SetDeviceTags(ctx, "pi1", nil) }, []string{}},
	}
	for _, s := range steps {
		d, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !slices.Equal(d.Tags, s.want) {
			t.Fatalf("%s: tags %v, want %v", s.name, d.Tags, s.want)
		}
		if !d.UpdatedAt.Equal(c.Now()) {
			t.Fatalf("%s: updated_at %v, want %v", s.name, d.UpdatedAt, c.Now())
		}
	}
	d, err := db.RotateDevice(ctx, "pi1", "sha256:new", key(7))
	if err != nil {
		t.Fatal(err)
	}
	if d.KeyVersion != 2 || d.SecretHash != "sha256:new" || !bytes.Equal(d.SkillKey, key(7)) {
		t.Errorf("rotated = %+v", d)
	}
}

// TestLateWill: a Will of an older session never marks a reconnected device
// offline (ARCHITECTURE.md §3).
func TestLateWill(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustDevice(t, db, "pi1")
	t0 := c.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		name     string
		p        fleet.Presence
		applied  bool
		online   bool
		session  uint64
		lastSeen time.Time
	}{
		{"first online", fleet.Presence{Online: true, Session: 6, At: at(1)}, true, true, 6, at(1)},
		{"reconnect", fleet.Presence{Online: true, Session: 7, At: at(2)}, true, true, 7, at(2)},
		{"late will of 6", fleet.Presence{Online: false, Session: 6, At: at(3)}, false, true, 7, at(2)},
		{"stale online of 5", fleet.Presence{Online: true, Session: 5, At: at(4)}, false, true, 7, at(2)},
		{"will of 7", fleet.Presence{Online: false, Session: 7, At: at(5)}, true, false, 7, at(5)},
		{"online 8, clock time", fleet.Presence{Online: true, Session: 8}, true, true, 8, t0},
	}
	for _, s := range steps {
		applied, err := db.UpdatePresence(ctx, "pi1", s.p)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		d, _ := db.GetDevice(ctx, "pi1")
		if applied != s.applied || d.Online != s.online || d.BirthSession != s.session || !d.LastSeen.Equal(s.lastSeen) {
			t.Fatalf("%s: applied=%v online=%v session=%d last_seen=%v; want %v %v %d %v",
				s.name, applied, d.Online, d.BirthSession, d.LastSeen, s.applied, s.online, s.session, s.lastSeen)
		}
	}
	// A birth of an older session is stale too; a newer one raises the session.
	if applied, err := db.UpdateBirth(ctx, "pi1", fleet.Birth{Session: 3, AgentVersion: "0.1.0"}); err != nil || applied {
		t.Fatalf("old birth: applied=%v err=%v", applied, err)
	}
	if applied, err := db.UpdateBirth(ctx, "pi1", fleet.Birth{Session: 9, AgentVersion: "0.3.0", At: at(9)}); err != nil || !applied {
		t.Fatalf("new birth: applied=%v err=%v", applied, err)
	}
	if applied, _ := db.UpdatePresence(ctx, "pi1", fleet.Presence{Online: false, Session: 8}); applied {
		t.Fatal("will of 8 applied after birth of 9")
	}
	d, _ := db.GetDevice(ctx, "pi1")
	if d.AgentVersion != "0.3.0" || d.BirthSession != 9 || !d.Online {
		t.Errorf("after birth: %+v", d)
	}
}

func TestDeviceReportedState(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	conn := json.RawMessage(`{"network": true, "internet": false}`)
	rep := json.RawMessage(`{"applied_version": 12, "skills": []}`)
	if err := db.UpdateConnectivity(ctx, "pi1", conn); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateReported(ctx, "pi1", rep, 12); err != nil {
		t.Fatal(err)
	}
	d, _ := db.GetDevice(ctx, "pi1")
	if string(d.Connectivity) != string(conn) || string(d.Reported) != string(rep) || d.AppliedVersion != 12 {
		t.Errorf("device = %s / %s / %d", d.Connectivity, d.Reported, d.AppliedVersion)
	}
}
