package discovery

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/gateway/artifact"
)

// CheckArchive checks a packed skill archive with the agent's own rules
// before it leaves this machine (`chorus skill pack`, `chorus fleet skill
// publish DIR`): unpacked within artifact's default limits into a
// directory named as dir (an installed skill's default name is its
// directory's), it must hold one skill, valid. dir is the packed source,
// named in the errors; the archive is only read.
func CheckArchive(dir string, archive []byte) (Skill, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Skill{}, err
	}
	root, err := os.MkdirTemp("", "chorus-pack-*")
	if err != nil {
		return Skill{}, fmt.Errorf("check the archive: %w", err)
	}
	defer os.RemoveAll(root)
	if err := artifact.Unpack(bytes.NewReader(archive), filepath.Join(root, filepath.Base(abs)), artifact.DefaultLimits()); err != nil {
		return Skill{}, err
	}
	cat, err := Discover(Config{Installed: root})
	if err != nil {
		return Skill{}, err
	}
	if p := cat.Problems(); len(p) > 0 {
		return Skill{}, fmt.Errorf("not a valid skill: %s", p[0])
	}
	entries := cat.Entries()
	switch {
	case len(entries) != 1:
		return Skill{}, fmt.Errorf("not a skill directory: no SKILL.md in %s (a skill is a directory holding a SKILL.md that names it and its exec; docs/skills.md)", abs)
	case !entries[0].Valid:
		return Skill{}, fmt.Errorf("invalid skill %s: %s", entries[0].ID, entries[0].Invalid)
	}
	return entries[0], nil
}
