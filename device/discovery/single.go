package discovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Single validates dir as one skill directory with the agent's own rules:
// an archive unpacked by the controller, say, must hold exactly one valid
// skill that declares its name (the unpacked directory's own name is
// arbitrary, so the default name would be meaningless).
func Single(dir string) (Skill, error) {
	cat, err := Discover(Config{User: []string{filepath.Dir(dir)}})
	if err != nil {
		return Skill{}, err
	}
	es := cat.Entries()
	switch {
	case len(es) == 0:
		return Skill{}, fmt.Errorf("want one skill, found 0: no %s at the top of the skill directory %s", skillDoc, filepath.Base(dir))
	case len(es) > 1:
		ids := make([]string, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		return Skill{}, fmt.Errorf("want one skill, found %d (%s): publish one skill directory at a time", len(es), strings.Join(ids, ", "))
	}
	s := es[0]
	switch {
	case !s.Valid:
		return Skill{}, errors.New(s.Invalid)
	case s.Name == "":
		return Skill{}, errors.New("SKILL.md declares no name")
	}
	return s, nil
}
