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
}

func newBirth(session uint64, version string, started time.Time, ws string) Birth {
	host, _ := os.Hostname()
	return Birth{
		Session: session, AgentVersion: version, StartedAt: started.UTC().Format(time.RFC3339),
		Hostname: host, Arch: runtime.GOARCH, Websocket: ws,
	}
}
