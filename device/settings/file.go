package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// FileName is the settings file inside a skill's settings directory.
const FileName = "settings.json"

// Path is the settings file of skill under root, or "" when root is "".
func Path(root, skill string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, skill, FileName)
}

// Write replaces skill's settings file with values, atomically: it writes a
// temporary file in the same directory and renames it into place, so a
// reader (or the watcher) never sees a half-written file.
func Write(root, skill string, values map[string]any) error {
	if err := topic.ValidSkillID(skill); err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	data, err := json.MarshalIndent(values, "", "  ")
	if err != nil {
		return fmt.Errorf("write settings of %s: encode: %w", skill, err)
	}
	dir := filepath.Join(root, skill)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write settings of %s: %w", skill, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, FileName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write settings of %s: %w", skill, err)
	}
	return nil
}
