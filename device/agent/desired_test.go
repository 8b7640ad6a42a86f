package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/desired"
)

// artifactServer packs a one-skill archive and serves it to the device's
// Basic-auth credentials at /v1/artifacts/<sha256>.
func artifactServer(t *testing.T, user, pass, id string) (*httptest.Server, artifact.Info) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+id+"\nversion: 2.0.0\nexec: run.sh\nready: on-start\n---\nA test skill.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755)
	var buf bytes.Buffer
	info, err := artifact.Pack(dir, &buf)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != desired.ArtifactURL(info.SHA256) {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "a.tar.gz", zeroTime, bytes.NewReader(buf.Bytes()))
	}))
	t.Cleanup(srv.Close)
	return srv, info
}

// The agent installs what the retained desired document names and reports
// it loaded, fleet-managed, with the applied version.
func TestDesiredInstallsAndReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, info := artifactServer(t, "pi-1", f.dev.Secret, "fleet.skill")
	f.cfg.ServerURL = srv.URL
	doc := desired.Doc{Version: 3, Skills: map[string]desired.Skill{
		"fleet.skill": {Version: "2.0.0", SHA256: info.SHA256, Size: info.Size, URL: desired.ArtifactURL(info.SHA256)},
	}}
	payload, err := desired.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.b.Publish(broker.Message{Topic: "chorus/v1/pi-1/desired", Payload: payload, QoS: 1, Retain: true}); err != nil {
		t.Fatal(err)
	}
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	for {
		m := f.obs.Expect(t, "chorus/v1/pi-1/skills", wait)
		var rep struct {
			AppliedVersion int64 `json:"applied_version"`
			Skills         []struct {
				ID, State string
				Managed   bool
			}
		}
		if err := json.Unmarshal(m.Payload, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.AppliedVersion == 3 && len(rep.Skills) == 1 && rep.Skills[0].State == "loaded" {
			if !rep.Skills[0].Managed || rep.Skills[0].ID != "fleet.skill" {
				t.Fatalf("report %+v", rep)
			}
			return
		}
	}
}
