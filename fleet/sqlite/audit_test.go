package sqlite_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	start := c.Now()
	for i := range 5 {
		e := &fleet.AuditEntry{Actor: "operator:alice", Action: "device.add", Subject: fmt.Sprintf("device/pi%d", i),
			Detail: json.RawMessage(`{"tags":["kitchen"]}`)}
		if i == 3 {
			e.Actor, e.Action, e.Subject, e.Detail = "operator:bob", "rollout.create", "rollout/7", nil
		}
		if err := db.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
		if !e.At.Equal(c.Now()) || e.ID != int64(i+1) {
			t.Fatalf("entry %d: id %d at %v", i, e.ID, e.At)
		}
		c.Advance(time.Second)
	}
	mustDevice(t, db, "pi1") // not audited by the store: callers know the actor

	tests := []struct {
		name   string
		filter fleet.AuditFilter
		limit  int
		want   []int64
	}{
		{"newest first", fleet.AuditFilter{}, 0, []int64{5, 4, 3, 2, 1}},
		{"limit", fleet.AuditFilter{}, 2, []int64{5, 4}},
		{"page back", fleet.AuditFilter{BeforeID: 4}, 2, []int64{3, 2}},
		{"actor", fleet.AuditFilter{Actor: "operator:bob"}, 0, []int64{4}},
		{"action", fleet.AuditFilter{Action: "device.add"}, 0, []int64{5, 3, 2, 1}},
		{"subject exact", fleet.AuditFilter{Subject: "device/pi2"}, 0, []int64{3}},
		{"subject prefix", fleet.AuditFilter{Subject: "device/"}, 0, []int64{5, 3, 2, 1}},
		{"since", fleet.AuditFilter{Since: start.Add(3 * time.Second)}, 0, []int64{5, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := db.ListAudit(ctx, tt.filter, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, e := range es {
				ids = append(ids, e.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
	es, _ := db.ListAudit(ctx, fleet.AuditFilter{Subject: "device/pi0"}, 1)
	if len(es) != 1 || string(es[0].Detail) != `{"tags":["kitchen"]}` || !es[0].At.Equal(start) {
		t.Errorf("entry = %+v", es)
	}
	wantCode(t, db.AppendAudit(ctx, &fleet.AuditEntry{Action: "x"}), fleet.EINVALID)
	wantCode(t, db.AppendAudit(ctx, &fleet.AuditEntry{Actor: "a", Action: "x", Detail: json.RawMessage(`1`)}), fleet.EINVALID)
}
