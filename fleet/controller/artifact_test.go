package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// TestArtifactPreviousDocument: a device gets an archive its current desired
// document names, or the one published before it (a download begun just
// before an uninstall completes), and not once neither does; another
// device never does (issue 16 §7).
func TestArtifactPreviousDocument(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v1 := e.publish("hello.test", "1.0.0")
	e.publish("other.test", "1.0.0")
	e.addDevice("pi-1")
	e.addDevice("pi-2")
	w := e.watcher("chorus/v1/pi-1/desired")
	open := func(dev string) string {
		f, err := e.ctl.OpenArtifact(ctx, dev, v1.SHA256)
		if err != nil {
			return fleet.ErrorCode(err)
		}
		f.Close()
		return "ok"
	}
	step := func(action fleet.AssignmentAction, skill string) {
		t.Helper()
		doc, err := e.ctl.RequestSkills(ctx, "pi-1", action, []string{skill})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); ; {
			m := w.Expect(t, "chorus/v1/pi-1/desired", time.Until(deadline))
			var got struct{ Version int64 }
			if json.Unmarshal(m.Payload, &got) == nil && got.Version >= doc.Version {
				return
			}
		}
	}
	step(fleet.AssignInstall, "hello.test")
	if got := open("pi-1"); got != "ok" {
		t.Fatalf("named by the current document: %s", got)
	}
	if got := open("pi-2"); got != fleet.ENOTFOUND {
		t.Fatalf("another device's artifact: %s, want %s", got, fleet.ENOTFOUND)
	}
	step(fleet.AssignUninstall, "hello.test")
	if got := open("pi-1"); got != "ok" {
		t.Fatalf("named by the previous document: %s", got)
	}
	step(fleet.AssignInstall, "other.test")
	if got := open("pi-1"); got != fleet.ENOTFOUND {
		t.Fatalf("named by neither document: %s, want %s", got, fleet.ENOTFOUND)
	}
}
