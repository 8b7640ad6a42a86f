package dashboard

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// A failed skill's last output lines, as the agent reported them, reach the
// device page (escaped), next to its error; a desired skill not reported
// says so.
func TestDevicePageShowsLastOutput(t *testing.T) {
	want := fleet.Desired{Skills: map[string]fleet.DesiredSkill{"bad.skill": {Version: "1.0.0"}, "late.skill": {Version: "2.0.0"}}}
	rows := skillRows(want, []state.Skill{{ID: "bad.skill", Version: "1.0.0", State: state.Failed,
		Error: "exited at start: exit status 3", Output: []string{"Traceback (most recent call last):", "ImportError: <no module>"}}})
	if len(rows) != 2 || rows[0].ID != "bad.skill" || len(rows[0].Output) != 2 || rows[1].State != "not reported" {
		t.Fatalf("rows %+v", rows)
	}
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	data := deviceData{Row: newRow(&fleet.Device{ID: "pi-1"}, want, false), Skills: rows}
	var b bytes.Buffer
	if err := pages["device"].Execute(&b, page{Title: "pi-1", Data: data}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, s := range []string{"exited at start: exit status 3", "last output", "Traceback (most recent call last):", "ImportError: &lt;no module&gt;"} {
		if !strings.Contains(html, s) {
			t.Errorf("device page lacks %q", s)
		}
	}
}

// The view's rows keep what the lists read and share the strings most
// devices have in common: two devices reporting the same skills hold one
// copy of each id, and the reason names the first failed skill.
func TestViewRowsAreCompact(t *testing.T) {
	rep := func() []byte { // a fresh copy per device, as the store returns it
		return []byte(`{"applied_version":0,"skills":[{"id":"a.bench","version":"1.0.0","state":"loaded"},` +
			`{"id":"b.bench","version":"1.0.0","state":"failed","error":"exit status 1","output":["boom"]},` +
			`{"id":"c.bench","version":"2.0.0","state":"invalid"}]}`)
	}
	device := func(id string) *fleet.Device {
		return &fleet.Device{ID: id, Online: true, Tags: []string{"kitchen"}, AgentVersion: "1.2.3",
			Connectivity: []byte(`{"network":true}`), Reported: rep()}
	}
	a, b := newRow(device("pi-1"), fleet.Desired{}, true), newRow(device("pi-2"), fleet.Desired{}, true)
	if got, want := a.Reason(), "skill b.bench failed: exit status 1 (and 1 more)"; got != want {
		t.Errorf("Reason = %q, want %q", got, want)
	}
	if a.failed != 2 || a.rank() != 0 || len(a.Skills) != 3 || a.Connectivity != nil {
		t.Errorf("row %+v: want 2 failed, rank 0, 3 skills, no connectivity", a)
	}
	for i := range a.Skills {
		if unsafe.StringData(a.Skills[i].ID) != unsafe.StringData(b.Skills[i].ID) ||
			unsafe.StringData(a.Skills[i].Version) != unsafe.StringData(b.Skills[i].Version) {
			t.Errorf("skill %d: the two rows hold two copies of %q %q", i, a.Skills[i].ID, a.Skills[i].Version)
		}
	}
	if unsafe.StringData(a.Tags[0]) != unsafe.StringData(b.Tags[0]) || unsafe.StringData(a.AgentVersion) != unsafe.StringData(b.AgentVersion) {
		t.Error("the two rows hold two copies of the tag or the agent version")
	}
	// A device's own page keeps everything (not compact).
	if full := newRow(device("pi-3"), fleet.Desired{}, false); full.Connectivity == nil {
		t.Error("the device page's row lost its connectivity")
	}
}
