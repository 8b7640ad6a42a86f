package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// Addresses of one IPv6 /64 share a bucket; IPv4 addresses do not.
func TestLimitKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"},
	} {
		if limitKey(c.a) != limitKey(c.b) {
			t.Errorf("%s and %s: keys %s, %s; want one /64", c.a, c.b, limitKey(c.a), limitKey(c.b))
		}
	}
	if limitKey("2001:db8:1:2::1") == limitKey("2001:db8:1:3::1") {
		t.Error("two /64s share a key")
	}
	if limitKey("198.18.0.1") == limitKey("198.18.0.2") {
		t.Error("two IPv4 addresses share a key")
	}
}

// A full limiter forgets its longest idle client instead of refusing a new
// one: a flood from many addresses cannot lock a new satellite out.
func TestLimiterFullForgetsTheIdlest(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	l := newLimiter(1, 2, func() time.Time { return now })
	for i := range maxLimited {
		now = now.Add(time.Microsecond) // far too little to refill anyone
		if ok, _ := l.allow(fmt.Sprintf("flood-%d", i)); !ok {
			t.Fatalf("flood-%d refused", i)
		}
		l.allow(fmt.Sprintf("flood-%d", i)) // its bucket is empty now: not refilled, not forgotten as refilled
	}
	now = now.Add(time.Microsecond)
	if ok, _ := l.allow("satellite"); !ok {
		t.Fatal("a new client was refused while the limiter was full")
	}
	if _, kept := l.buckets["flood-0"]; kept || len(l.buckets) != maxLimited {
		t.Fatalf("the idlest client kept (%v), %d clients remembered; want flood-0 forgotten and %d", kept, len(l.buckets), maxLimited)
	}
}
