package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// sessionFile holds the last birth session number in the data dir.
const sessionFile = "session"

// nextSession increments and persists the birth session number. Every MQTT
// connection of the agent is one birth with a fresh number, so the
// controller can tell a late Will of an old connection from the current one
// (ARCHITECTURE.md §3: availability carries the session as a user property).
func nextSession(dataDir string) (uint64, error) {
	path := filepath.Join(dataDir, sessionFile)
	var n uint64
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("read session number: %w", err)
	default:
		n, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read session number %s: %w", path, err)
		}
	}
	n++
	// The late-Will rule compares session numbers: a number that went back
	// after a power cut would let an old Will mark the device offline.
	if err := atomicfile.WriteFile(path, []byte(strconv.FormatUint(n, 10)+"\n"), 0o600); err != nil {
		return 0, fmt.Errorf("write session number: %w", err)
	}
	return n, nil
}
