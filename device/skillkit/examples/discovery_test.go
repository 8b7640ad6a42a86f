package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/skillkit/examples"
)

// bundledSkills is the repository's configs/skills, relative to this package.
const bundledSkills = "../../../configs/skills"

func TestBundledSkillsAreDiscovered(t *testing.T) {
	t.Parallel()
	cat, err := discovery.Discover(discovery.Config{Bundled: []string{bundledSkills}})
	if err != nil {
		t.Fatalf("discover %s: %v", bundledSkills, err)
	}
	if p := cat.Problems(); len(p) > 0 {
		t.Errorf("discovery problems: %v", p)
	}
	tests := []struct {
		id, example  string
		requirements []string
	}{
		{id: "echo-hub.chorus", example: "echo-hub", requirements: []string{}},
		{id: "hello.chorus", example: "hello", requirements: []string{}},
		{id: "screen.chorus", example: "screen", requirements: []string{"gui"}},
		{id: "weather.chorus", example: "weather", requirements: []string{"internet"}},
	}
	if got := len(cat.Entries()); got != len(tests) {
		t.Errorf("discovered %d skills, want %d", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			s, ok := cat.Get(tt.id)
			if !ok {
				t.Fatalf("%s not discovered", tt.id)
			}
			if !s.Valid {
				t.Fatalf("%s invalid: %s", tt.id, s.Invalid)
			}
			if strings.Join(s.Requirements, ",") != strings.Join(tt.requirements, ",") {
				t.Errorf("requirements = %q, want %q", s.Requirements, tt.requirements)
			}
			if s.Version != "1.0.0" || s.Ready != discovery.ReadyMessage || s.Origin != "chorus" || s.Description == "" {
				t.Errorf("metadata = version %q ready %q origin %q description %q", s.Version, s.Ready, s.Origin, s.Description)
			}
			if err := s.VerifyExec(); err != nil {
				t.Errorf("VerifyExec: %v", err)
			}
			run, err := os.ReadFile(filepath.Join(s.Dir, "run.sh"))
			if err != nil {
				t.Fatal(err)
			}
			if want := `exec "$CHORUS_BIN" skill example ` + tt.example; !strings.Contains(string(run), want) {
				t.Errorf("run.sh lacks %q:\n%s", want, run)
			}
		})
	}
}

func TestRunUnknownExample(t *testing.T) {
	t.Parallel()
	err := examples.Run(t.Context(), "nope", skillkitConfig())
	if err == nil || !strings.Contains(err.Error(), "hello, screen, weather") {
		t.Errorf("Run(nope) = %v, want an error listing the examples", err)
	}
}
