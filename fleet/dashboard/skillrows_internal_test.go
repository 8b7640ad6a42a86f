package dashboard

import (
	"bytes"
	"strings"
	"testing"

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
	data := deviceData{Row: newRow(&fleet.Device{ID: "pi-1"}, want), Skills: rows}
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
