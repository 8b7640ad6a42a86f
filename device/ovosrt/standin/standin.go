// Package standin holds the stand-in ovos-skill-launcher (docs/ovos.md) as
// bytes, so a test binary built anywhere, -trimpath included, can write it
// out and run it; the script itself stays a file here for `chorus bench
// agent --ovos-launcher` and for reading.
package standin

import _ "embed"

// Launcher is ovos-skill-launcher, the script.
//
//go:embed ovos-skill-launcher
var Launcher []byte
