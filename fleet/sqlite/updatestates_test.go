package sqlite_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// TestUpdateStates: a batch stores every update as UpdateReported and
// UpdateConnectivity would, in one transaction; an update of an unknown
// device or an invalid payload fails alone, and GetDevice (its cached row
// primed before the batch) returns what is stored after it, also for a
// device the batch changes twice.
func TestUpdateStates(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	for _, id := range []string{"pi1", "pi2", "pi3"} {
		mustDevice(t, db, id)
		wantStored(t, db, id) // primes the cached row
	}
	report := func(n int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"applied_version":%d,"skills":[]}`, n))
	}
	conn := json.RawMessage(`{"network":true,"internet":false,"gui":false}`)
	updates := []fleet.StateUpdate{
		{DeviceID: "pi1", Reported: true, Payload: report(3), AppliedVersion: 3},
		{DeviceID: "nobody", Reported: true, Payload: report(1), AppliedVersion: 1},
		{DeviceID: "pi2", Payload: conn},
		{DeviceID: "pi2", Reported: true, Payload: report(4), AppliedVersion: 4},
		{DeviceID: "pi3", Reported: true, Payload: json.RawMessage(`[1]`), AppliedVersion: 1},
		{DeviceID: "pi3", Reported: true, Payload: report(5), AppliedVersion: -1},
		{DeviceID: "pi1", Payload: conn},
	}
	errs, err := db.UpdateStates(ctx, updates)
	if err != nil {
		t.Fatalf("UpdateStates: %v", err)
	}
	want := []string{"", fleet.ENOTFOUND, "", "", fleet.EINVALID, fleet.EINVALID, ""}
	if len(errs) != len(want) {
		t.Fatalf("%d results for %d updates", len(errs), len(want))
	}
	for i, code := range want {
		if fleet.ErrorCode(errs[i]) != code {
			t.Errorf("update %d (%s): %v, want code %q", i, updates[i].DeviceID, errs[i], code)
		}
	}
	for id, w := range map[string]struct {
		applied int64
		conn    bool
	}{"pi1": {3, true}, "pi2": {4, true}, "pi3": {0, false}} {
		wantStored(t, db, id)
		d, err := db.GetDevice(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.AppliedVersion != w.applied || (d.Connectivity != nil) != w.conn {
			t.Errorf("%s after the batch: applied %d, connectivity %s; want applied %d, connectivity stored %v",
				id, d.AppliedVersion, d.Connectivity, w.applied, w.conn)
		}
	}
}

// TestUpdateStatesAllOrNothing: a batch that fails part-way (the database
// fills up after its first updates are written) leaves every device and
// its cached row as they were, and the same batch commits once there is
// room.
func TestUpdateStatesAllOrNothing(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	updates := make([]fleet.StateUpdate, 40)
	for i := range updates {
		id := fmt.Sprintf("pi-%02d", i)
		mustDevice(t, db, id)
		wantStored(t, db, id)
		// 8 KiB each: far more than the pages the file has free.
		payload := fmt.Sprintf(`{"applied_version":1,"skills":[],"pad":%q}`, strings.Repeat("x", 8192))
		updates[i] = fleet.StateUpdate{DeviceID: id, Reported: true, Payload: json.RawMessage(payload), AppliedVersion: 1}
	}
	if err := db.SetMaxPageCount(ctx, 1); err != nil { // at most the pages it has now
		t.Fatal(err)
	}
	errs, err := db.UpdateStates(ctx, updates)
	if err == nil || errs != nil {
		t.Fatalf("a batch bigger than the room left: %v, %v; want it refused whole", errs, err)
	}
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE {
		t.Fatalf("code %q (%v): want unavailable (database full)", fleet.ErrorCode(err), err)
	}
	for _, u := range updates {
		wantStored(t, db, u.DeviceID)
		if d := stored(t, db, u.DeviceID); d.Reported != nil || d.AppliedVersion != 0 {
			t.Fatalf("%s after the refused batch: applied %d, report stored %v; want nothing", u.DeviceID, d.AppliedVersion, d.Reported != nil)
		}
	}
	integrityOK(t, db.Path())

	if err := db.SetMaxPageCount(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if errs, err := db.UpdateStates(ctx, updates); err != nil || len(errs) != len(updates) {
		t.Fatalf("the batch once there is room: %v, %v", errs, err)
	}
	for _, u := range updates {
		wantStored(t, db, u.DeviceID)
		if d := stored(t, db, u.DeviceID); d.AppliedVersion != 1 {
			t.Fatalf("%s after the batch committed: applied %d, want 1", u.DeviceID, d.AppliedVersion)
		}
	}
}
