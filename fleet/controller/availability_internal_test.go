package controller

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/heapcost"
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
		return noteOf(m, seq, prev)
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

// TestAvailNoteIsCompact: the note the inbox keeps per device for the
// gateway's life holds none of the message it reduces (payload, user
// properties, the whole 136-byte broker.Message that made the map keep its
// values out of line). Bytes per device, from HeapAlloc around 20,000 notes
// of distinct topics (the topic strings made before): 116 with the note,
// 247 with the whole message kept.
func TestAvailNoteIsCompact(t *testing.T) {
	const n = 20000
	topics := make([]string, n)
	for i := range topics {
		topics[i] = fmt.Sprintf("chorus/v1/dev-%05d/availability", i)
	}
	b := newInbox()
	per := int64(heapcost.PerObject(n, func() {
		for i, tp := range topics {
			m := broker.Message{Topic: tp, Payload: []byte("online"), QoS: 1, Retain: true,
				User: []broker.UserProperty{{Key: "session", Value: strconv.Itoa(1000 + i)}}}
			b.mu.Lock()
			b.noteAvailabilityLocked(m)
			b.mu.Unlock()
		}
	}))
	t.Logf("%d bytes per device", per)
	if per > 160 {
		t.Errorf("the inbox keeps %d bytes per device's availability, want at most 160", per)
	}
	last, ok := b.lastAvailability(topics[7])
	if !ok || last.payload != "online" || last.session != 1007 || last.republish || last.seq != 8 {
		t.Fatalf("note of topic 7 = %+v, %v; want online, session 1007, not a re-publish, seq 8", last, ok)
	}
}
