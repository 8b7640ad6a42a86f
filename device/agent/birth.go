package agent

import (
	"os"
	"runtime"
	"time"
)

// Birth is the retained birth payload (ARCHITECTURE.md §3).
type Birth struct {
	Session      uint64 `json:"session"`
	AgentVersion string `json:"agent_version"`
	StartedAt    string `json:"started_at"`
	Hostname     string `json:"hostname"`
	Arch         string `json:"arch"`
	Websocket    string `json:"websocket"` // the OVOS drop-in's address; "" when off
	// Isolation says how skills are kept from the agent: "uid" (each under
	// its own uid) or "none" (as the agent's user; docs/security.md).
	Isolation string `json:"isolation"`
}

func newBirth(session uint64, version string, started time.Time, ws, isolation string) Birth {
	host, _ := os.Hostname()
	return Birth{
		Session: session, AgentVersion: version, StartedAt: started.UTC().Format(time.RFC3339),
		Hostname: host, Arch: runtime.GOARCH, Websocket: ws, Isolation: isolation,
	}
}
