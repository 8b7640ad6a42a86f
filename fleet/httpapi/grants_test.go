package httpapi_test

import (
	"strings"
	"testing"
)

// TestSkillGrantsAPI drives /v1/skill-grants (docs/api.md): put, replace,
// list, remove by scope, and bad input answered 4xx with nothing stored.
func TestSkillGrantsAPI(t *testing.T) {
	srv, _ := start(t)
	op := bearer(token)
	do(t, srv, call{"POST", "/v1/devices", `{"id":"pi-1"}`, op}, nil)

	steps := []struct {
		name   string
		c      call
		status int
		want   string // a substring of the answer; for errors, its code
	}{
		{"fleet-wide", call{"PUT", "/v1/skill-grants/installer", `{"allow":["ovos.skills.install*"]}`, op}, 200, `"allow":["ovos.skills.install*"]`},
		{"device", call{"PUT", "/v1/skill-grants/installer", `{"device":"pi-1","allow":["skillmanager.rescan"]}`, op}, 200, `"device":"pi-1"`},
		{"replace", call{"PUT", "/v1/skill-grants/installer", `{"allow":["ovos.pip.*","ovos.pip.*"]}`, op}, 200, `"allow":["ovos.pip.*"]`},
		{"unrestricted type", call{"PUT", "/v1/skill-grants/installer", `{"allow":["speak"]}`, op}, 400, "invalid"},
		{"no types", call{"PUT", "/v1/skill-grants/installer", `{"allow":[]}`, op}, 400, "invalid"},
		{"wrong type", call{"PUT", "/v1/skill-grants/installer", `{"allow":"ovos.pip.*"}`, op}, 400, "invalid"},
		{"unknown field", call{"PUT", "/v1/skill-grants/installer", `{"allow":["ovos.pip.*"],"devices":["pi-1"]}`, op}, 400, "invalid"},
		{"malformed", call{"PUT", "/v1/skill-grants/installer", `{"allow":[`, op}, 400, "invalid"},
		{"bad skill id", call{"PUT", "/v1/skill-grants/bad%20skill", `{"allow":["ovos.pip.*"]}`, op}, 400, "invalid"},
		{"unknown device", call{"PUT", "/v1/skill-grants/installer", `{"device":"pi-9","allow":["ovos.pip.*"]}`, op}, 404, "not_found"},
		{"no token", call{"PUT", "/v1/skill-grants/installer", `{"allow":["ovos.pip.*"]}`, nil}, 401, "unauthorized"},
		{"list", call{"GET", "/v1/skill-grants", "", op}, 200, `"skill":"installer","allow":["ovos.pip.*"]`},
		{"remove device grant", call{"DELETE", "/v1/skill-grants/installer?device=pi-1", "", op}, 204, ""},
		{"remove it again", call{"DELETE", "/v1/skill-grants/installer?device=pi-1", "", op}, 404, "not_found"},
		{"remove fleet-wide", call{"DELETE", "/v1/skill-grants/installer", "", op}, 204, ""},
		{"empty list", call{"GET", "/v1/skill-grants", "", op}, 200, `{"grants":[]}`},
	}
	for _, s := range steps {
		resp, b := do(t, srv, s.c, nil)
		if resp.StatusCode != s.status {
			t.Fatalf("%s: %d %s, want %d", s.name, resp.StatusCode, b, s.status)
		}
		if s.status >= 400 && errorCode(b) != s.want || s.status < 400 && !strings.Contains(string(b), s.want) {
			t.Fatalf("%s: answer %s, want %q", s.name, b, s.want)
		}
	}
	resp, b := do(t, srv, call{"GET", "/v1/audit?subject=skill/installer", "", op}, nil)
	if resp.StatusCode != 200 || strings.Count(string(b), `"skill.grant"`) != 3 || strings.Count(string(b), `"skill.revoke"`) != 2 {
		t.Fatalf("audit: %d %s", resp.StatusCode, b)
	}
}
