//go:build !chorus_agent

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/api/apitest"
)

// TestFleetDeviceShowSkills: `device show` lists each skill with its state
// and why, not only counts (issue 16 §8).
func TestFleetDeviceShowSkills(t *testing.T) {
	t.Parallel()
	d := apitest.Kitchen()
	d.Skills = []api.DeviceSkill{
		{ID: "hello.chorus", Desired: "1.0.0", Version: "1.0.0", State: "loaded"},
		{ID: "weather.chorus", Desired: "2.1.0", Version: "2.1.0", State: "waiting", Reason: "waiting for internet"},
		{ID: "screen.chorus", Desired: "1.0.0", State: api.SkillMissing, Reason: "in the desired document, not reported by the device (not installed yet)"},
	}
	front := newFront(t, "tok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fakeReply(w, 200, api.DeviceResponse{Device: d})
	}))
	r := chorus(fleetCtx(t), front.env(), "fleet", "device", "show", "kitchen")
	want := "" +
		"SKILL           DESIRED  VERSION  STATE    WHY\n" +
		"hello.chorus    1.0.0    1.0.0    loaded   -\n" +
		"weather.chorus  2.1.0    2.1.0    waiting  waiting for internet\n" +
		"screen.chorus   1.0.0    -        missing  in the desired document, not reported by the device (not installed yet)\n"
	if r.code != 0 || !strings.HasSuffix(r.stdout, want) {
		t.Errorf("exit code %d, stdout:\n%s\nwant it to end with:\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
}
