package sqlite_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func newToken(id string, uses int, expires time.Time) *fleet.JoinToken {
	return &fleet.JoinToken{ID: id, SecretHash: "sha256:" + id, Tags: []string{"b", "a", "b"}, Uses: uses, ExpiresAt: expires}
}

func TestJoinTokenUses(t *testing.T) {
	t.Parallel()
	db, clk := mustOpen(t)
	tok := newToken("jt-1", 2, clk.Now().Add(time.Hour))
	if err := db.CreateJoinToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateJoinToken(ctx, newToken("jt-1", 1, clk.Now().Add(time.Hour))); fleet.ErrorCode(err) != fleet.ECONFLICT {
		t.Errorf("same id again: %v, want conflict", err)
	}
	got, err := db.GetJoinToken(ctx, "jt-1")
	if err != nil || got.Uses != 2 || got.Used != 0 || strings.Join(got.Tags, ",") != "a,b" || got.SecretHash != "sha256:jt-1" {
		t.Fatalf("GetJoinToken = %+v, %v", got, err)
	}
	for i := 1; i <= 2; i++ {
		if got, err = db.UseJoinToken(ctx, "jt-1"); err != nil || got.Used != i {
			t.Fatalf("use %d: %+v, %v", i, got, err)
		}
	}
	if _, err := db.UseJoinToken(ctx, "jt-1"); fleet.ErrorCode(err) != fleet.EINVALID || !strings.Contains(err.Error(), "used up") {
		t.Errorf("third use: %v, want used up", err)
	}
	if err := db.RefundJoinToken(ctx, "jt-1"); err != nil {
		t.Fatal(err)
	}
	if got, err = db.UseJoinToken(ctx, "jt-1"); err != nil || got.Used != 2 {
		t.Errorf("use after refund: %+v, %v", got, err)
	}
	if _, err := db.UseJoinToken(ctx, "nope"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("unknown token: %v", err)
	}
}

func TestJoinTokenExpiresAndRevokes(t *testing.T) {
	t.Parallel()
	db, clk := mustOpen(t)
	if err := db.CreateJoinToken(ctx, newToken("jt-x", 5, clk.Now().Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateJoinToken(ctx, newToken("jt-r", 5, clk.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := db.UseJoinToken(ctx, "jt-x"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token: %v", err)
	}
	r, err := db.RevokeJoinToken(ctx, "jt-r")
	if err != nil || r.RevokedAt.IsZero() {
		t.Fatalf("revoke: %+v, %v", r, err)
	}
	if _, err := db.UseJoinToken(ctx, "jt-r"); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked token: %v", err)
	}
	for _, id := range []string{"jt-x", "jt-r"} {
		if got, _ := db.GetJoinToken(ctx, id); got.Used != 0 {
			t.Errorf("%s: a refused use was counted: %+v", id, got)
		}
	}
	ts, err := db.ListJoinTokens(ctx)
	if err != nil || len(ts) != 2 {
		t.Errorf("ListJoinTokens = %d, %v", len(ts), err)
	}
}

func TestPendingDevices(t *testing.T) {
	t.Parallel()
	db, clk := mustOpen(t)
	p := &fleet.PendingDevice{ID: "p-1", DeviceID: "pi-1", Tags: []string{"kitchen"}, TokenID: "jt-1", Address: "198.18.0.2", SecretHash: "sha256:x"}
	if err := db.CreatePending(ctx, p); err != nil {
		t.Fatal(err)
	}
	dup := *p
	dup.ID = "p-2"
	if err := db.CreatePending(ctx, &dup); fleet.ErrorCode(err) != fleet.ECONFLICT || !strings.Contains(err.Error(), "--device") {
		t.Errorf("same device waiting twice: %v", err)
	}
	if err := db.CreatePending(ctx, &fleet.PendingDevice{ID: "p-3", DeviceID: "bad id", SecretHash: "h"}); fleet.ErrorCode(err) != fleet.EINVALID {
		t.Errorf("bad device id: %v", err)
	}
	got, err := db.AcceptPending(ctx, "p-1")
	if err != nil || !got.Accepted {
		t.Fatalf("accept: %+v, %v", got, err)
	}
	ps, err := db.ListPending(ctx)
	if err != nil || len(ps) != 1 || !ps[0].Accepted || ps[0].Address != "198.18.0.2" || ps[0].Tags[0] != "kitchen" {
		t.Fatalf("ListPending = %+v, %v", ps, err)
	}
	got, err = db.CollectPending(ctx, "p-1")
	if err != nil || got.CollectedAt.IsZero() {
		t.Fatalf("collect: %+v, %v", got, err)
	}
	if ps, err := db.ListPending(ctx); err != nil || len(ps) != 0 {
		t.Errorf("ListPending after collection = %+v, %v; want none waiting", ps, err)
	}
	if got, err := db.GetPending(ctx, "p-1"); err != nil || !got.CollectedAt.Equal(clk.Now()) {
		t.Errorf("GetPending after collection = %+v, %v", got, err)
	}
	if err := db.DeletePending(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetPending(ctx, "p-1"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("after delete: %v", err)
	}
	if _, err := db.AcceptPending(ctx, "p-1"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("accept unknown: %v", err)
	}
}

// An accepted enrolment not yet collected dies with its device: collected
// after the name was removed and given to a new device, it would rotate
// that device's secret away.
func TestDeviceRemovalEndsItsEnrolment(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustDevice(t, db, "kitchen")
	p := &fleet.PendingDevice{ID: "p-1", DeviceID: "kitchen", Tags: []string{}, TokenID: "jt-1", Address: "198.18.0.2", SecretHash: "sha256:x"}
	if err := db.CreatePending(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AcceptPending(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDevice(ctx, "kitchen"); err != nil {
		t.Fatal(err)
	}
	if ps, err := db.ListPending(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("pending after the device's removal: %+v, %v; want none", ps, err)
	}
}
