package installer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// settingsFile is what the fleet's settings for a skill encode to, and its
// sha256 (recorded in the state so an unchanged document never rewrites
// the file). Map keys are sorted, so equal settings give equal bytes.
func settingsFile(settings map[string]any) (data []byte, sum string, err error) {
	if settings == nil {
		return nil, "", nil
	}
	data, err = json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, "", fmt.Errorf("encode settings: %w", err)
	}
	data = append(data, '\n')
	h := sha256.Sum256(data)
	return data, hex.EncodeToString(h[:]), nil
}

// writeSettings replaces <SettingsRoot>/<id>/settings.json atomically; the
// settings watcher (SKILL_MANAGER §8) announces the change to the skill.
// The fleet's settings replace the file as a whole: they are fleet state.
func (in *Installer) writeSettings(id string, data []byte) error {
	dir := filepath.Join(in.cfg.SettingsRoot, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "settings.json"), data, 0o644); err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	return nil
}
