package broker

import (
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/chorus-edge/chorus/gateway/heapcost"
)

// TestDeviceAccountIsCompact: a device account grants exactly what
// ARCHITECTURE.md §6 says, in few allocations (roles.go, DeviceAccount),
// and its lists do not write into one another when appended to.
func TestDeviceAccountIsCompact(t *testing.T) {
	a := DeviceAccount("pi-7", "sha256:00", nil, 1)
	state := []string{"chorus/v1/pi-7/availability", "chorus/v1/pi-7/birth", "chorus/v1/pi-7/connectivity", "chorus/v1/pi-7/skills"}
	if want := append(slices.Clone(state), "chorus/v1/pi-7/bus/+"); !slices.Equal(a.Publish, want) {
		t.Fatalf("Publish = %q, want %q", a.Publish, want)
	}
	if !slices.Equal(a.Retain, state) {
		t.Fatalf("Retain = %q, want %q", a.Retain, state)
	}
	if want := []string{"chorus/v1/pi-7/#"}; !slices.Equal(a.Subscribe, want) {
		t.Fatalf("Subscribe = %q, want %q", a.Subscribe, want)
	}
	_ = append(a.Retain, "x")
	_ = append(a.Publish, "x")
	if a.Publish[4] != "chorus/v1/pi-7/bus/+" || a.Subscribe[0] != "chorus/v1/pi-7/#" {
		t.Fatalf("an append to one list wrote into another: Publish %q Subscribe %q", a.Publish, a.Subscribe)
	}

	// Bytes held per device account (as the gateway's table holds one per
	// enrolled device), the Account value itself not counted.
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "pi-" + strconv.Itoa(100000+i)
	}
	held := make([]Account, n)
	per := heapcost.PerObject(n, func() {
		for i, id := range ids {
			held[i] = DeviceAccount(id, "sha256:00", nil, 1)
		}
	})
	t.Logf("device account lists: %.0f bytes per device", per)
	if per > 300 {
		t.Fatalf("a device account's lists hold %.0f bytes, want at most 300", per)
	}
	runtime.KeepAlive(held)
}
