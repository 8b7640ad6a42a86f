package installer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// state is the installer's record of what it manages, saved as StateFile.
//
// A skill is in Skills from just before its directory is first renamed into
// the installed root until just after it is removed, so a crash at any
// point leaves the installer owning every directory it may have written.
// A record with an empty SHA256 means "owned, content unknown": the next
// pass reinstalls it.
type state struct {
	AppliedVersion *int64            `json:"applied_version,omitempty"`
	Skills         map[string]record `json:"skills"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

type record struct {
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	// Settings is the sha256 of the settings.json the installer last wrote
	// for the skill, "" when the fleet sets none.
	Settings string `json:"settings_sha256,omitempty"`
}

func loadState(path string) (state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{Skills: map[string]record{}}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("read state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("read state %s: %w", path, err)
	}
	if st.Skills == nil {
		st.Skills = map[string]record{}
	}
	return st, nil
}

// clone returns a deep copy a pass can change freely.
func (s state) clone() state {
	s.Skills = maps.Clone(s.Skills)
	if s.Skills == nil {
		s.Skills = map[string]record{}
	}
	if s.AppliedVersion != nil {
		v := *s.AppliedVersion
		s.AppliedVersion = &v
	}
	return s
}

func (s state) managed() []string { return slices.Sorted(maps.Keys(s.Skills)) }

// snapshot returns a copy of the current state for a pass.
func (in *Installer) snapshot() state {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.st.clone()
}

// save writes st atomically, then publishes it to the accessors. Only the
// pass holding run calls it.
func (in *Installer) save(st *state) error {
	st.UpdatedAt = in.cfg.Now().UTC()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(in.cfg.InstalledRoot, StateFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	in.mu.Lock()
	in.st = st.clone()
	in.mu.Unlock()
	return nil
}
