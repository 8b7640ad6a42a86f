package gatewayd

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/state"
)

// retainedDictionary returns the sample documents the broker primes its
// deflate of large retained payloads with (broker.Config.RetainedDictionary):
// one of each shape retained for every device and over the broker's 1 KiB
// bound, rendered by the encoders that write the real ones, so a change of
// format changes the samples with it. Deflate finds nearer matches cheaper,
// so the most numerous shape, the Home Assistant device document, comes
// last. The samples' ids and names are made up: what a real document
// shares with them is its structure, keys and constant values. The sample
// inputs are valid, so an encoder error is a bug; it only leaves that
// sample out (the payloads are still deflated, less tightly), and
// TestRetainedDictionary fails on it.
func retainedDictionary(version string) []byte {
	var b bytes.Buffer
	// A desired document (chorus/v1/<dev>/desired, the controller's).
	sum := strings.Repeat("5e", 32)
	desired, err := json.Marshal(fleet.Desired{Version: 12, Skills: map[string]fleet.DesiredSkill{
		"ovos-skill-sample.openvoiceos": {Version: "1.2.0", SHA256: sum, Size: 20480, URL: fleet.ArtifactURL(sum)},
	}})
	if err == nil {
		b.Write(desired)
	}
	// A skills report (chorus/v1/<dev>/skills, the agent's).
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	report, err := state.Encode(state.Skills{AppliedVersion: 12, ManifestDigest: sum, UpdatedAt: at,
		Skills: []state.Skill{
			{ID: "ovos-skill-sample.openvoiceos", Version: "1.2.0", State: state.Loaded, Active: true,
				Requirements: []string{"network"}, Managed: true, Since: at},
			{ID: "ovos-skill-other.openvoiceos", Version: "0.4.1", State: state.Waiting,
				WaitingFor: []string{"internet"}, Requirements: []string{"internet"}, Since: at},
		},
		Training: state.Training{Status: "trained"}})
	if err == nil {
		b.Write(report)
	}
	// A Home Assistant device document (homeassistant/device/<id>/config).
	_, config, err := hadiscovery.Build(hadiscovery.Input{Device: "sample.device_1", Name: "Sample",
		AgentVersion: version, ChorusVersion: version, Skills: []hadiscovery.Skill{
			{ID: "ovos-skill-sample.openvoiceos", Managed: true},
			{ID: "ovos-skill-other.openvoiceos"},
		}})
	if err == nil {
		b.Write(config)
	}
	return b.Bytes()
}
