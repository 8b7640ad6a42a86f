package fleet_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// catalog resolves "<skill>@<version>"; version "" is "<skill>@latest".
func catalog(versions ...string) fleet.VersionResolver {
	known := map[string]bool{}
	for _, v := range versions {
		known[v] = true
	}
	return func(skill, version string) (*fleet.SkillVersion, bool) {
		if version == "" {
			version = "latest"
		}
		if !known[skill+"@"+version] {
			return nil, false
		}
		return &fleet.SkillVersion{SkillID: skill, Version: version, SHA256: fmt.Sprintf("%064x", len(skill+version)), Size: 10}, true
	}
}

func as(seq int64, skill string, t fleet.Target, action fleet.AssignmentAction, version, settings string) *fleet.Assignment {
	a := &fleet.Assignment{SkillID: skill, Target: t, Action: action, Version: version, Seq: seq}
	if settings != "" {
		a.Settings = json.RawMessage(settings)
	}
	return a
}

func TestComputeDesired(t *testing.T) {
	cat := catalog("w@latest", "w@1", "w@2", "w@3", "t@latest")
	dev, tag, all := fleet.DeviceTarget("pi1"), fleet.TagTarget("kitchen"), fleet.AllTarget()
	tests := []struct {
		name string
		tags []string
		as   []*fleet.Assignment
		want map[string]string // skill -> version[+settings]
	}{
		{"nothing", nil, nil, map[string]string{}},
		{"all installs latest", nil, []*fleet.Assignment{as(1, "w", all, fleet.AssignInstall, "", "")},
			map[string]string{"w": "latest"}},
		{"other device ignored", nil, []*fleet.Assignment{as(1, "w", fleet.DeviceTarget("pi2"), fleet.AssignInstall, "1", "")},
			map[string]string{}},
		{"tag not carried", nil, []*fleet.Assignment{as(1, "w", tag, fleet.AssignInstall, "1", "")},
			map[string]string{}},
		{"tag carried", []string{"kitchen"}, []*fleet.Assignment{as(1, "w", tag, fleet.AssignInstall, "1", "")},
			map[string]string{"w": "1"}},
		{"device beats newer tag and all", []string{"kitchen"}, []*fleet.Assignment{
			as(1, "w", dev, fleet.AssignInstall, "1", ""),
			as(2, "w", tag, fleet.AssignInstall, "2", ""),
			as(3, "w", all, fleet.AssignInstall, "3", ""),
		}, map[string]string{"w": "1"}},
		{"tag beats newer all", []string{"kitchen"}, []*fleet.Assignment{
			as(1, "w", tag, fleet.AssignInstall, "2", ""),
			as(2, "w", all, fleet.AssignInstall, "3", ""),
		}, map[string]string{"w": "2"}},
		{"newest of two tags", []string{"kitchen", "upstairs"}, []*fleet.Assignment{
			as(5, "w", fleet.TagTarget("upstairs"), fleet.AssignInstall, "2", ""),
			as(4, "w", tag, fleet.AssignInstall, "1", ""),
		}, map[string]string{"w": "2"}},
		{"device uninstall overrides all", nil, []*fleet.Assignment{
			as(1, "w", all, fleet.AssignInstall, "", ""),
			as(2, "w", dev, fleet.AssignUninstall, "", ""),
			as(3, "t", all, fleet.AssignInstall, "", ""),
		}, map[string]string{"t": "latest"}},
		{"device install overrides tag uninstall", []string{"kitchen"}, []*fleet.Assignment{
			as(2, "w", tag, fleet.AssignUninstall, "", ""),
			as(1, "w", dev, fleet.AssignInstall, "1", ""),
		}, map[string]string{"w": "1"}},
		{"configure alone installs nothing", nil, []*fleet.Assignment{
			as(1, "w", all, fleet.AssignConfigure, "", `{"a":1}`),
		}, map[string]string{}},
		{"settings layered all < tag < device", []string{"kitchen"}, []*fleet.Assignment{
			as(9, "w", all, fleet.AssignInstall, "", `{"units":"metric","lang":"en","a":0}`),
			as(8, "w", dev, fleet.AssignConfigure, "", `{"lang":"de"}`),
			as(7, "w", tag, fleet.AssignConfigure, "", `{"lang":"fr", "units": "imperial"}`),
		}, map[string]string{"w": `latest{"a":0,"lang":"de","units":"imperial"}`}},
		{"uninstall settings ignored", []string{"kitchen"}, []*fleet.Assignment{
			as(1, "w", dev, fleet.AssignInstall, "1", `{"x":1}`),
			as(2, "w", tag, fleet.AssignUninstall, "", ""),
		}, map[string]string{"w": `1{"x":1}`}},
		{"unresolvable left out", nil, []*fleet.Assignment{
			as(1, "w", all, fleet.AssignInstall, "9", ""),
			as(2, "t", all, fleet.AssignInstall, "", ""),
		}, map[string]string{"t": "latest"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fleet.ComputeDesired("pi1", tt.tags, tt.as, cat)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d skills %v, want %v", len(got), got, tt.want)
			}
			for skill, want := range tt.want {
				s, ok := got[skill]
				if !ok {
					t.Fatalf("skill %s missing from %v", skill, got)
				}
				if g := s.Version + string(s.Settings); g != want {
					t.Errorf("%s = %s, want %s", skill, g, want)
				}
				if s.URL != "/v1/artifacts/"+s.SHA256 || s.Size != 10 {
					t.Errorf("%s: url %q size %d", skill, s.URL, s.Size)
				}
			}
		})
	}
}

// TestDesiredJSON pins the wire shape of ARCHITECTURE.md §3.
func TestDesiredJSON(t *testing.T) {
	tests := []struct {
		name string
		doc  fleet.Desired
		want string
	}{
		{"empty", fleet.Desired{Version: 3}, `{"version":3,"skills":{}}`},
		{"one skill", fleet.Desired{Version: 12, Skills: map[string]fleet.DesiredSkill{"hello.chorus": {
			Version: "1.0.0", SHA256: "ab", Size: 20480, URL: "/v1/artifacts/ab", Settings: json.RawMessage(`{"units":"metric"}`),
		}}}, `{"version":12,"skills":{"hello.chorus":{"version":"1.0.0","sha256":"ab","size":20480,"url":"/v1/artifacts/ab","settings":{"units":"metric"}}}}`},
		{"no settings", fleet.Desired{Version: 1, Skills: map[string]fleet.DesiredSkill{"a": {Version: "1", SHA256: "c", Size: 1, URL: "/v1/artifacts/c"}}},
			`{"version":1,"skills":{"a":{"version":"1","sha256":"c","size":1,"url":"/v1/artifacts/c"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			var back fleet.Desired
			if err := json.Unmarshal(b, &back); err != nil || back.Version != tt.doc.Version || !fleet.SameSkills(back.Skills, tt.doc.Skills) {
				t.Errorf("round trip: %+v, %v", back, err)
			}
		})
	}
}
