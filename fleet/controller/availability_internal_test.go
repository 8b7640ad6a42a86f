package controller

import (
	"strconv"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
)

// TestAvailabilityAction: what Reconcile does about the last message on a
// device's availability topic, the presence it wants being "online" of
// session 7.
func TestAvailabilityAction(t *testing.T) {
	t.Parallel()
	note := func(payload string, session uint64, republish bool, seq, prev uint64) availNote {
		m := broker.Message{Payload: []byte(payload), User: []broker.UserProperty{{Key: "session", Value: strconv.FormatUint(session, 10)}}}
		if republish {
			m.User = append(m.User, broker.UserProperty{Key: originProperty, Value: originGateway})
		}
		return availNote{m: m, seq: seq, prev: prev}
	}
	want := fleet.Presence{Online: true, Session: 7}
	sure := &recheck{sent: want, after: 4}
	tests := []struct {
		name string
		last availNote
		rc   *recheck
		want availAction
	}{
		{"late Will", note("offline", 6, false, 5, 4), nil, availRestate},
		{"older re-publish", note("online", 6, true, 5, 4), nil, availRestate},
		{"newer session", note("offline", 8, false, 5, 4), nil, availWait},
		{"device's own word, not applied yet", note("offline", 7, false, 5, 4), nil, availWait},
		{"re-publish saying otherwise", note("offline", 7, true, 5, 4), nil, availRestate},
		{"device's own word agreeing", note("online", 7, false, 5, 4), nil, availLeave},
		{"re-publish agreeing", note("online", 7, true, 5, 4), nil, availLeave},
		{"re-check: re-publish right after its decision", note("online", 7, true, 5, 4), sure, availLeave},
		{"re-check: a message in between", note("online", 7, true, 6, 5), sure, availRestate},
		{"re-check: the device's word after it", note("online", 7, false, 6, 5), sure, availRestate},
		{"re-check: after a late Will saying otherwise", note("online", 7, true, 5, 4),
			&recheck{sent: want, after: 4, unsure: true}, availRestate},
		{"re-check: the device's newer word waits", note("offline", 7, false, 6, 5), sure, availWait},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := availabilityAction(tc.last, want, tc.rc); got != tc.want {
				t.Fatalf("availabilityAction = %d, want %d", got, tc.want)
			}
		})
	}
}
