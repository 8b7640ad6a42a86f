package api

import (
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// TestNewDeviceDetail: device show's list says which skills are loaded,
// missing or failing and why (issue 16 §8).
func TestNewDeviceDetail(t *testing.T) {
	t.Parallel()
	d := &fleet.Device{ID: "pi-1", Reported: []byte(`{"applied_version":3,"skills":[
		{"id":"hello.chorus","version":"1.0.0","state":"loaded","managed":true},
		{"id":"weather.chorus","version":"2.0.0","state":"waiting","waiting_for":["internet"],"managed":true},
		{"id":"crash.chorus","version":"1.0.0","state":"failed","error":"exit status 3","managed":true},
		{"id":"old.chorus","version":"1.0.0","state":"loaded","managed":true},
		{"id":"local.skill","version":"abc","state":"loaded"}]}`)}
	want := fleet.Desired{Version: 4, Skills: map[string]fleet.DesiredSkill{
		"hello.chorus": {Version: "1.0.0"}, "weather.chorus": {Version: "2.0.0"}, "crash.chorus": {Version: "1.0.0"},
		"old.chorus": {Version: "2.0.0"}, "screen.chorus": {Version: "1.0.0"}}}
	got := NewDeviceDetail(d, want).Skills
	exp := []DeviceSkill{
		{ID: "hello.chorus", Desired: "1.0.0", Version: "1.0.0", State: "loaded"},
		{ID: "weather.chorus", Desired: "2.0.0", Version: "2.0.0", State: "waiting", Reason: "waiting for internet"},
		{ID: "crash.chorus", Desired: "1.0.0", Version: "1.0.0", State: "failed", Reason: "exit status 3"},
		{ID: "old.chorus", Desired: "2.0.0", Version: "1.0.0", State: "loaded", Reason: "runs 1.0.0, desired 2.0.0"},
		{ID: "local.skill", Version: "abc", State: "loaded"},
		{ID: "screen.chorus", Desired: "1.0.0", State: SkillMissing, Reason: "in the desired document, not reported by the device (not installed yet)"},
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("skills:\ngot  %+v\nwant %+v", got, exp)
	}
	if NewDevice(d, want).Skills != nil {
		t.Fatal("the list view carries no per-skill detail")
	}
}
