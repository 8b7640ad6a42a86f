package settings_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-edge/chorus/device/settings"
)

func TestPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, root, skill, want string
	}{
		{name: "root", root: "/data/settings", skill: "hello.chorus", want: "/data/settings/hello.chorus/settings.json"},
		{name: "no root", root: "", skill: "hello.chorus", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settings.Path(tt.root, tt.skill); got != tt.want {
				t.Errorf("Path(%q, %q) = %q, want %q", tt.root, tt.skill, got, tt.want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := settings.Write(root, "weather.chorus", map[string]any{"units": "metric"}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	b, err := os.ReadFile(settings.Path(root, "weather.chorus"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || got["units"] != "metric" {
		t.Errorf("settings file = %s (%v)", b, err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "weather.chorus"))
	if len(entries) != 1 {
		t.Errorf("skill dir holds %d entries, want only settings.json", len(entries))
	}
	if err := settings.Write(root, "../escape", nil); err == nil {
		t.Error("Write accepted an invalid skill id")
	}
}
