package skillkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/chorus-edge/chorus/gateway/bus"
)

// Bus message types a skill uses. SKILL_MANAGER §1, §8.
const (
	TypeReady           = "chorus.skill.ready"
	TypeSettingsChanged = "ovos.skills.settings_changed"
)

// Skill is a running skill: its identity, its bus client and its settings.
// It is safe for concurrent use by the skill's handlers.
type Skill struct {
	env Env
	bus *bus.Client
	log *slog.Logger
}

// ID is the skill id.
func (s *Skill) ID() string { return s.env.SkillID }

// Device is the id of the device the skill runs on.
func (s *Skill) Device() string { return s.env.Device }

// Bus is the skill's client on its device's bus.
func (s *Skill) Bus() *bus.Client { return s.bus }

// Logger logs with the skill's id.
func (s *Skill) Logger() *slog.Logger { return s.log }

// Env is the environment the skill was started with.
func (s *Skill) Env() Env { return s.env }

// Settings reads the skill's settings.json afresh on every call, so it
// always sees the agent's last write. A missing file (or no settings path)
// is an empty map; a file that is not a JSON object is an error.
func (s *Skill) Settings() (map[string]any, error) {
	return readSettings(s.env.Settings)
}

func readSettings(path string) (map[string]any, error) {
	if path == "" {
		return map[string]any{}, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read settings %s: %w", path, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// OnSettingsChanged calls f whenever the agent reports that this skill's
// settings changed (ovos.skills.settings_changed with its skill_id;
// SKILL_MANAGER §8). f runs on the handler's own goroutine; call Settings
// there to read the new values. off removes f.
func (s *Skill) OnSettingsChanged(f func()) (off func(), err error) {
	off, err = s.bus.On(TypeSettingsChanged, func(_ context.Context, d bus.Delivery) {
		if id, _ := d.Message.Data["skill_id"].(string); id == s.ID() {
			f()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("skill %s: on settings changed: %w", s.ID(), err)
	}
	return off, nil
}
