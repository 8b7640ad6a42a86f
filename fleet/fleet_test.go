package fleet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		code     string
		message  string
		sentinel error
	}{
		{"nil", nil, "", "", nil},
		{"not found", fleet.Errorf(fleet.ENOTFOUND, "device %q not found", "x"), fleet.ENOTFOUND, `device "x" not found`, fleet.ErrNotFound},
		{"wrapped conflict", fmt.Errorf("add: %w", fleet.Errorf(fleet.ECONFLICT, "taken")), fleet.ECONFLICT, "taken", fleet.ErrConflict},
		{"invalid", fleet.ValidDeviceID("-x"), fleet.EINVALID, `device id "-x": must not start with '-' or '.'`, fleet.ErrInvalid},
		{"internal", errors.New("disk I/O error"), fleet.EINTERNAL, "Internal error.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fleet.ErrorCode(tt.err); got != tt.code {
				t.Errorf("ErrorCode = %q, want %q", got, tt.code)
			}
			if got := fleet.ErrorMessage(tt.err); got != tt.message {
				t.Errorf("ErrorMessage = %q, want %q", got, tt.message)
			}
			if tt.sentinel != nil && !errors.Is(tt.err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.sentinel)
			}
			for _, other := range []error{fleet.ErrNotFound, fleet.ErrConflict, fleet.ErrInvalid} {
				if other != tt.sentinel && errors.Is(tt.err, other) {
					t.Errorf("errors.Is(%v, %v) = true", tt.err, other)
				}
			}
		})
	}
}

func TestValidators(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		check func(string) error
		in    string
		ok    bool
	}{
		{"device ok", fleet.ValidDeviceID, "pi-kitchen.1", true},
		{"device reserved", fleet.ValidDeviceID, "gateway", false},
		{"device slash", fleet.ValidDeviceID, "a/b", false},
		{"device long", fleet.ValidDeviceID, long, false},
		{"skill ok", fleet.ValidSkillID, "hello.chorus", true},
		{"skill dotdot", fleet.ValidSkillID, "..", false},
		{"tag ok", fleet.ValidTag, "kitchen", true},
		{"tag gateway allowed", fleet.ValidTag, "gateway", true},
		{"tag empty", fleet.ValidTag, "", false},
		{"tag space", fleet.ValidTag, "living room", false},
		{"version semver", fleet.ValidVersion, "2.0.0-rc.1+build.5", true},
		{"version empty", fleet.ValidVersion, "", false},
		{"version leading dot", fleet.ValidVersion, ".1", false},
		{"version slash", fleet.ValidVersion, "1/2", false},
		{"sha ok", fleet.ValidSHA256, strings.Repeat("ab", 32), true},
		{"sha upper", fleet.ValidSHA256, strings.Repeat("AB", 32), false},
		{"sha short", fleet.ValidSHA256, "abc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("check(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err != nil && fleet.ErrorCode(err) != fleet.EINVALID {
				t.Errorf("code = %q, want invalid", fleet.ErrorCode(err))
			}
		})
	}
}

func TestTargetValidateAndMatch(t *testing.T) {
	tests := []struct {
		name   string
		target fleet.Target
		valid  bool
		match  bool // against device "pi1" tagged kitchen
	}{
		{"device match", fleet.DeviceTarget("pi1"), true, true},
		{"device other", fleet.DeviceTarget("pi2"), true, false},
		{"tag match", fleet.TagTarget("kitchen"), true, true},
		{"tag other", fleet.TagTarget("bedroom"), true, false},
		{"all", fleet.AllTarget(), true, true},
		{"all with value", fleet.Target{Kind: fleet.TargetAll, Value: "x"}, false, true},
		{"unknown kind", fleet.Target{Kind: "group", Value: "x"}, false, false},
		{"bad tag", fleet.TagTarget("a b"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.target.Validate(); (err == nil) != tt.valid {
				t.Errorf("Validate = %v, want valid=%v", err, tt.valid)
			}
			if got := tt.target.Matches("pi1", []string{"kitchen"}); got != tt.match {
				t.Errorf("Matches = %v, want %v", got, tt.match)
			}
		})
	}
}

func TestAssignmentValidate(t *testing.T) {
	obj := json.RawMessage(`{"units":"metric"}`)
	tests := []struct {
		name string
		a    fleet.Assignment
		ok   bool
	}{
		{"install latest", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignInstall}, true},
		{"install pinned with settings", fleet.Assignment{SkillID: "s", Target: fleet.TagTarget("k"), Action: fleet.AssignInstall, Version: "1.0", Settings: obj}, true},
		{"uninstall", fleet.Assignment{SkillID: "s", Target: fleet.DeviceTarget("d"), Action: fleet.AssignUninstall}, true},
		{"uninstall with version", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignUninstall, Version: "1"}, false},
		{"uninstall with settings", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignUninstall, Settings: obj}, false},
		{"configure", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignConfigure, Settings: obj}, true},
		{"configure without settings", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignConfigure}, false},
		{"settings not object", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignInstall, Settings: json.RawMessage(`[1]`)}, false},
		{"settings broken", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: fleet.AssignInstall, Settings: json.RawMessage(`{`)}, false},
		{"bad action", fleet.Assignment{SkillID: "s", Target: fleet.AllTarget(), Action: "upgrade"}, false},
		{"bad skill", fleet.Assignment{SkillID: "-s", Target: fleet.AllTarget(), Action: fleet.AssignInstall}, false},
		{"bad target", fleet.Assignment{SkillID: "s", Target: fleet.DeviceTarget("gateway"), Action: fleet.AssignInstall}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.a.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestStrategyValidate(t *testing.T) {
	tests := []struct {
		name string
		s    fleet.Strategy
		ok   bool
	}{
		{"zero", fleet.Strategy{}, true},
		{"full", fleet.Strategy{Canary: 1, MaxInFlight: 5, FailureThresholdPct: 20, MinExecuted: 3, Timeout: 1e9}, true},
		{"negative canary", fleet.Strategy{Canary: -1}, false},
		{"threshold over 100", fleet.Strategy{FailureThresholdPct: 101}, false},
		{"negative timeout", fleet.Strategy{Timeout: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.s.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestValidJSONObject: what it accepts is what decoding into a
// map[string]json.RawMessage accepts (its implementation before issue 19
// round seven), without building the map.
func TestValidJSONObject(t *testing.T) {
	cases := map[string]string{
		"object": `{"a":1}`, "empty object": `{}`, "leading space": " \t\r\n{\"a\":[1,{}]}",
		"trailing space": `{"a":1}  `, "duplicate keys": `{"a":1,"a":2}`, "invalid utf-8": "{\"a\":\"\xff\"}",
		"null": `null`, "array": `[{"a":1}]`, "string": `"{}"`, "number": `1`, "truncated": `{"a":`,
		"two objects": `{}{}`, "leading garbage": `x{}`, "nested array": `{"skills":[[],[1,2]]}`,
		"non-breaking space": "\u00a0{}", "empty": ``,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			var m map[string]json.RawMessage
			want := len(raw) == 0 || json.Unmarshal([]byte(raw), &m) == nil && m != nil
			err := fleet.ValidJSONObject("payload", json.RawMessage(raw), 1<<10)
			if (err == nil) != want {
				t.Fatalf("ValidJSONObject(%q) = %v, want accepted %v", raw, err, want)
			}
		})
	}
}
