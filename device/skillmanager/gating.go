package skillmanager

import (
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
)

// flags are the connectivity gating flags of SKILL_MANAGER §5.
type flags struct {
	network, internet, gui bool
	// allowReloads is false once mycroft.gui.available said permanent:
	// later disconnect events no longer clear any flag (ovos-behaviour §1.5).
	allowReloads bool
	changedAt    time.Time
	source       string // what caused the last change
	reason       string // why internet is false after the startup check, "" otherwise
}

// unmetLocked returns the requirements of reqs the device does not meet
// right now, in declared order (SKILL_MANAGER §1, §4 step 4): network,
// internet (which implies network: the internet flag is only ever set
// together with network), gui, and free words met only when listed in
// Capabilities. Never nil.
func (m *Manager) unmetLocked(reqs []string) []string {
	out := []string{}
	for _, r := range reqs {
		if !m.metLocked(r) {
			out = append(out, r)
		}
	}
	return out
}

func (m *Manager) metLocked(req string) bool {
	switch req {
	case discovery.RequireNetwork:
		return m.conn.network
	case discovery.RequireInternet:
		return m.conn.internet && m.conn.network
	case discovery.RequireGUI:
		return m.conn.gui
	}
	for _, c := range m.cfg.Capabilities {
		if c == req {
			return true
		}
	}
	return false
}
