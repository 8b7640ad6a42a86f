package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// BenchmarkDesiredReportedDiff is the reconciler's per-report work on a
// device with 50 skills: parse the skills report the agent published and
// judge an install and an uninstall execution against the desired document
// (verdict), as Reconcile does after every report.
func BenchmarkDesiredReportedDiff(b *testing.B) {
	doc := fleet.Desired{Version: 42, Skills: map[string]fleet.DesiredSkill{}}
	var skills []map[string]any
	for i := range 50 {
		id := fmt.Sprintf("skill%02d.bench", i)
		doc.Skills[id] = fleet.DesiredSkill{Version: "1.0.0", SHA256: fmt.Sprintf("%064x", i), Size: 20480, URL: "/v1/artifacts/x"}
		skills = append(skills, map[string]any{"id": id, "version": "1.0.0", "state": "loaded", "active": true,
			"waiting_for": []string{}, "degraded": false, "requirements": []string{}, "managed": true, "error": "",
			"attempts": 0, "next_retry": nil, "since": time.Now().UTC()})
	}
	payload, err := json.Marshal(map[string]any{"applied_version": 42, "manifest_digest": "", "updated_at": time.Now().UTC(), "skills": skills})
	if err != nil {
		b.Fatal(err)
	}
	install := &fleet.Rollout{SkillID: "skill49.bench", Version: "1.0.0", Action: fleet.RolloutInstall}
	uninstall := &fleet.Rollout{SkillID: "gone.bench", Action: fleet.RolloutUninstall}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := parseReport(payload)
		if err != nil {
			b.Fatal(err)
		}
		if to, _, done := verdict(install, doc, rep, 42); !done || to != fleet.ExecSucceeded {
			b.Fatalf("install verdict %s %v", to, done)
		}
		if to, _, done := verdict(uninstall, doc, rep, 42); !done || to != fleet.ExecSucceeded {
			b.Fatalf("uninstall verdict %s %v", to, done)
		}
	}
}
