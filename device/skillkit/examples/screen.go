package examples

import (
	"github.com/chorus-edge/chorus/device/skillkit"
)

// TypeScreenPing is the message the screen example answers.
const TypeScreenPing = "screen.chorus.ping"

// setupScreen answers screen.chorus.ping. It requires gui, so it shows
// gating on the GUI's presence; it draws nothing.
func setupScreen(s *skillkit.Skill) error {
	return answer(s, TypeScreenPing, func() (map[string]any, error) {
		return map[string]any{"screen": "shown on the screen of " + s.Device()}, nil
	})
}
