package skillmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// inactiveFile is the on-disk form of the deactivated set (SKILL_MANAGER §7
// [ours]: a skill switched off stays off after a restart until activated).
type inactiveFile struct {
	Inactive []string `json:"inactive"`
}

// loadInactive reads path; a missing file (or "") is an empty set.
func loadInactive(path string) (map[string]bool, error) {
	out := map[string]bool{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read inactive skills: %w", err)
	}
	var f inactiveFile
	if err := json.Unmarshal(data, &f); err != nil {
		return out, fmt.Errorf("parse inactive skills %s: %w", path, err)
	}
	for _, id := range f.Inactive {
		if id != "" {
			out[id] = true
		}
	}
	return out, nil
}

// persistInactive writes the current inactive set. Writes are serialized
// by persistMu and each writes the set as it is when it runs, so the last
// write always holds the latest set. The write is atomic (temp file +
// rename); a failure is logged and the in-memory set stays authoritative.
func (m *Manager) persistInactive() {
	if m.cfg.InactiveFile == "" {
		return
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.Lock()
	ids := make([]string, 0, len(m.inactive))
	for id := range m.inactive {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	if err := writeInactive(m.cfg.InactiveFile, ids); err != nil {
		m.log.Error("persist inactive skills", "file", m.cfg.InactiveFile, "err", err)
	}
}

func writeInactive(path string, ids []string) error {
	data, err := json.MarshalIndent(inactiveFile{Inactive: ids}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}
