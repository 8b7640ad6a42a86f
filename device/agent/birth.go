package agent

import (
	"os"
	"runtime"
	"time"

	"github.com/chorus-edge/chorus/gateway/state"
)

func newBirth(session uint64, version string, started time.Time, ws, isolation string) state.Birth {
	host, _ := os.Hostname()
	return state.Birth{
		Session: session, AgentVersion: version, StartedAt: started.UTC().Format(time.RFC3339),
		Hostname: host, Arch: runtime.GOARCH, Websocket: ws, Isolation: isolation,
	}
}
