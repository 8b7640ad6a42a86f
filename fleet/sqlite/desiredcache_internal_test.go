package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// TestDesiredCacheRefusesStaleReads: a document read before a drop that
// concerns it is not kept (the write may have committed after the read's
// snapshot); one read after the drop, or before a drop of another device,
// is.
func TestDesiredCacheRefusesStaleReads(t *testing.T) {
	doc := fleet.Desired{Version: 3, Skills: map[string]fleet.DesiredSkill{"weather": {Version: "1.0.0"}}}
	c := newDesiredCache()

	_, seq, ok := c.get("pi1")
	if ok {
		t.Fatal("empty cache hit")
	}
	c.drop("pi1")
	c.put("pi1", doc, seq)
	if _, _, ok := c.get("pi1"); ok {
		t.Fatal("a read from before pi1's drop was kept")
	}

	_, seq, _ = c.get("pi1")
	c.drop("pi2")
	c.put("pi1", doc, seq)
	if got, _, ok := c.get("pi1"); !ok || got.Version != 3 {
		t.Fatal("a drop of pi2 refused pi1's read")
	}

	_, seq, _ = c.get("pi2")
	c.dropAll()
	c.put("pi2", doc, seq)
	if _, _, ok := c.get("pi2"); ok {
		t.Fatal("a read from before a drop of every device was kept")
	}
	if _, _, ok := c.get("pi1"); ok {
		t.Fatal("dropAll kept pi1")
	}

	_, seq, _ = c.get("pi3")
	c.dropTarget(fleet.DeviceTarget("pi3"))
	c.put("pi3", doc, seq)
	if _, _, ok := c.get("pi3"); ok {
		t.Fatal("a device assignment did not drop its device")
	}
	_, seq, _ = c.get("pi3")
	c.dropTarget(fleet.TagTarget("kitchen"))
	c.put("pi3", doc, seq)
	if _, _, ok := c.get("pi3"); ok {
		t.Fatal("a tag assignment did not drop every device")
	}
}

// TestDesiredForFillsTheCache: DesiredFor keeps what it returns.
func TestDesiredForFillsTheCache(t *testing.T) {
	db, ctx := openWithPi1(t)
	want, err := db.DesiredFor(ctx, "pi1")
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok := db.desired.get("pi1")
	if !ok || got.Version != want.Version {
		t.Fatalf("cache holds %+v (%v), DesiredFor returned %+v", got, ok, want)
	}
}

// TestDesiredCacheReplace: a writer's own document is kept unless a drop
// came after the sequence it read inside its transaction, and replacing
// refuses readers that started before it.
func TestDesiredCacheReplace(t *testing.T) {
	doc := fleet.Desired{Version: 7}
	c := newDesiredCache()
	_, readerSeq, _ := c.get("pi1")
	seq := c.sequence()
	c.replace("pi1", doc, seq)
	if got, _, ok := c.get("pi1"); !ok || got.Version != 7 {
		t.Fatal("replace did not keep the writer's document")
	}
	c.put("pi1", fleet.Desired{Version: 6}, readerSeq)
	if got, _, _ := c.get("pi1"); got.Version != 7 {
		t.Fatal("a reader from before replace overwrote it")
	}
	seq = c.sequence()
	c.drop("pi1") // a later write's drop ran before the replace
	c.replace("pi1", fleet.Desired{Version: 8}, seq)
	if _, _, ok := c.get("pi1"); ok {
		t.Fatal("replace kept a document a later write dropped")
	}
}

// TestDesiredCacheSharesOnlyEqualSkills: documents with the same skills
// share one cached map, yet each device gets its own version, a copy it
// may change without touching the cache, and a document that differs in
// any field or settings byte is kept as it is.
func TestDesiredCacheSharesOnlyEqualSkills(t *testing.T) {
	skill := fleet.DesiredSkill{Version: "1.0.0", SHA256: "ab", Size: 10, URL: "http://x/a", Settings: []byte(`{"a":1}`)}
	doc := func(v int64, s fleet.DesiredSkill) fleet.Desired {
		return fleet.Desired{Version: v, Skills: map[string]fleet.DesiredSkill{"weather": s}}
	}
	c := newDesiredCache()
	seq := c.sequence()
	c.put("pi1", doc(1, skill), seq)
	c.put("pi2", doc(2, skill), seq)
	if got, _, _ := c.get("pi2"); got.Version != 2 || !sameSkills(got.Skills, doc(2, skill).Skills) {
		t.Fatalf("pi2 = %+v", got)
	}
	got, _, _ := c.get("pi1")
	got.Skills["weather"].Settings[1] = 'X'
	got.Skills["news"] = skill
	if again, _, _ := c.get("pi2"); again.Version != 2 || len(again.Skills) != 1 || string(again.Skills["weather"].Settings) != `{"a":1}` {
		t.Fatalf("a caller's change of pi1's copy reached pi2's cached document: %+v", again)
	}

	for name, change := range map[string]func(*fleet.DesiredSkill){
		"version":  func(s *fleet.DesiredSkill) { s.Version = "1.0.1" },
		"sha256":   func(s *fleet.DesiredSkill) { s.SHA256 = "cd" },
		"size":     func(s *fleet.DesiredSkill) { s.Size = 11 },
		"url":      func(s *fleet.DesiredSkill) { s.URL = "http://x/b" },
		"settings": func(s *fleet.DesiredSkill) { s.Settings = []byte(`{"a":2}`) },
		"none":     func(s *fleet.DesiredSkill) { s.Settings = nil },
	} {
		s := skill
		change(&s)
		c.replace("pi3", doc(3, s), c.sequence())
		got, _, ok := c.get("pi3")
		if !ok || got.Version != 3 || !reflect.DeepEqual(got.Skills, doc(3, s).Skills) {
			t.Errorf("%s changed: cached %+v, want %+v", name, got, doc(3, s))
		}
	}
	c.replace("pi4", fleet.Desired{Version: 4, Skills: map[string]fleet.DesiredSkill{"weather": skill, "news": skill}}, c.sequence())
	if got, _, _ := c.get("pi4"); len(got.Skills) != 2 {
		t.Errorf("a second skill was lost: %+v", got)
	}
}

// TestPublishKeepsUnassignedDocuments: publishing a version of a skill no
// assignment names changes no desired document, so the cached documents
// stay; once an assignment names the skill, publishing drops them all
// (PublishVersion).
func TestPublishKeepsUnassignedDocuments(t *testing.T) {
	db, ctx := openWithPi1(t)
	publish := func(version string) {
		t.Helper()
		h := sha256.Sum256([]byte(version))
		sum := hex.EncodeToString(h[:])
		if _, err := db.PublishVersion(ctx, &fleet.SkillVersion{SkillID: "weather", Version: version, SHA256: sum, Size: 1,
			Manifest: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	cached := func() bool {
		_, _, ok := db.desired.get("pi1")
		return ok
	}
	publish("1.0.0")
	if _, err := db.DesiredFor(ctx, "pi1"); err != nil {
		t.Fatal(err)
	}
	publish("1.1.0")
	if !cached() {
		t.Fatal("a version of a skill no assignment names dropped pi1's document")
	}
	if err := db.PutAssignment(ctx, &fleet.Assignment{SkillID: "weather", Target: fleet.AllTarget(), Action: fleet.AssignInstall}); err != nil {
		t.Fatal(err)
	}
	if d, err := db.DesiredFor(ctx, "pi1"); err != nil || d.Skills["weather"].Version != "1.1.0" {
		t.Fatalf("pi1 desires %+v (%v), want weather 1.1.0", d, err)
	}
	publish("2.0.0")
	if cached() {
		t.Fatal("a version of an assigned skill kept pi1's document")
	}
	if d, err := db.DesiredFor(ctx, "pi1"); err != nil || d.Skills["weather"].Version != "2.0.0" {
		t.Fatalf("pi1 desires %+v (%v), want weather 2.0.0", d, err)
	}
}

// openWithPi1 opens a store in a temporary directory, closed at the test's
// end, with one device, pi1.
func openWithPi1(t *testing.T) (*DB, context.Context) {
	t.Helper()
	db, err := Open(t.TempDir()+"/fleet.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	if err := db.CreateDevice(ctx, &fleet.Device{ID: "pi1", SecretHash: "x", SkillKey: make([]byte, 32)}); err != nil {
		t.Fatal(err)
	}
	return db, ctx
}
