// Package ovosconf writes the mycroft.conf that points a stock OVOS bus
// client at its route on the agent's websocket drop-in. ovos-bus-client
// builds its URL from the websocket section's host, port, route and ssl and
// sends no credentials (BUS.md §3), so the route is the credential: the file
// is readable by its owner alone (docs/ovos.md).
package ovosconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// Websocket is mycroft.conf's websocket section.
type Websocket struct {
	Host  string `json:"host"`
	Port  int    `json:"port"`
	Route string `json:"route"`
	SSL   bool   `json:"ssl"`
}

// FromURL splits a ws:// or wss:// URL into the section.
func FromURL(u string) (Websocket, error) {
	p, err := url.Parse(u)
	if err != nil {
		return Websocket{}, err
	}
	host, port, err := net.SplitHostPort(p.Host)
	if err != nil {
		return Websocket{}, fmt.Errorf("websocket url: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || (p.Scheme != "ws" && p.Scheme != "wss") {
		return Websocket{}, errors.New("websocket url: want ws://host:port/route or wss://")
	}
	return Websocket{Host: host, Port: n, Route: p.Path, SSL: p.Scheme == "wss"}, nil
}

// Write replaces path with a mycroft.conf holding only the websocket section
// for wsURL: mode 0600, owned by uid:gid (-1 keeps the writer's), written to
// a temporary file that is chowned before the rename, so the route is never
// readable by anyone else. A file with the same content is left alone. The
// directory is created (0755) when missing.
func Write(path, wsURL string, uid, gid int) error {
	ws, err := FromURL(wsURL)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]Websocket{"websocket": ws}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) && owned(path, uid, gid) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFileOwned(path, b, 0o600, atomicfile.Owner{UID: uid, GID: gid})
}

func owned(path string, uid, gid int) bool {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		return false
	}
	u, g := ownerOf(st)
	return (uid < 0 || u == uid) && (gid < 0 || g == gid)
}
