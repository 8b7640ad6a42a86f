// Package hadiscovery builds the Home Assistant MQTT device-based discovery
// config of one Chorus satellite (ARCHITECTURE.md §3, fleet-anchors §3): one
// retained message on <prefix>/device/chorus_<device>/config that describes
// the whole device and its entities. It is a pure function of its Input; the
// fleet controller decides when to publish.
//
// Home Assistant validates the payload strictly (homeassistant/components/
// mqtt/schemas.py DEVICE_DISCOVERY_SCHEMA): unknown top-level keys and
// unknown keys inside the device ("dev") or origin ("o") block reject the
// whole message, the device block needs an identifier, the origin a name,
// every component its platform ("p"). So the payload uses only schema keys,
// in Home Assistant's abbreviated form (abbreviations.go), which Home
// Assistant expands before it validates.
package hadiscovery

import (
	"fmt"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// Fixed values of the device and origin blocks.
const (
	DefaultGateway = "chorus_gateway" // the gateway's device identifier (via_device)
	Model          = "Chorus satellite"
	OriginName     = "chorus"
	OriginURL      = "https://github.com/chorus-edge/chorus"
)

// Payloads of the topics the entities read and write (ARCHITECTURE.md §3).
const (
	PayloadOnline  = "online"
	PayloadOffline = "offline"
	PayloadOn      = "ON"
	PayloadOff     = "OFF"
	PayloadInstall = "install"
)

// The Home Assistant platforms Build uses.
const (
	PlatformBinarySensor = "binary_sensor"
	PlatformSensor       = "sensor"
	PlatformSwitch       = "switch"
	PlatformUpdate       = "update"
)

// Skill is one skill of the device's skills report.
type Skill struct {
	ID      string
	Title   string // "" shows the id
	Managed bool   // fleet-managed: gets an update entity
}

// Input is what one device's config is built from.
type Input struct {
	Prefix        string // discovery prefix; "" = topic.DefaultHAPrefix
	Device        string // device id
	Name          string // device name in Home Assistant; "" = the id
	AgentVersion  string // dev.sw_version; "" leaves it out
	ChorusVersion string // o.sw_version; "" leaves it out
	Gateway       string // via_device; "" = DefaultGateway
	Skills        []Skill

	// Withdrawn are components (key → platform, as Components returns them)
	// of an earlier config that are gone: Home Assistant removes a component
	// of a device config only when it is sent with nothing but its platform,
	// so Build emits {"p": platform} for each key not in the live set.
	Withdrawn map[string]string
}

// device is the "dev" block: only keys of MQTT_ENTITY_DEVICE_INFO_SCHEMA
// (abbreviated as deviceAbbreviations says).
type device struct {
	Identifiers []string `json:"ids"`
	Name        string   `json:"name"`
	Model       string   `json:"mdl"`
	SWVersion   string   `json:"sw,omitempty"`
	ViaDevice   string   `json:"via_device,omitempty"` // the gateway's own config has none
}

// origin is the "o" block: only keys of MQTT_ORIGIN_INFO_SCHEMA
// (abbreviated as originAbbreviations says).
type origin struct {
	Name       string `json:"name"`
	SWVersion  string `json:"sw,omitempty"`
	SupportURL string `json:"url"`
}

// config is the whole message: only keys of DEVICE_DISCOVERY_SCHEMA,
// abbreviated. The availability options are shared: every component
// inherits them. Components are built with full key names and abbreviated
// when encoded (encode.go); the struct tags say what encode writes.
type config struct {
	Device              device               `json:"dev"`
	Origin              origin               `json:"o"`
	AvailabilityTopic   string               `json:"avty_t"`
	PayloadAvailable    string               `json:"pl_avail"`
	PayloadNotAvailable string               `json:"pl_not_avail"`
	Components          map[string]component `json:"cmps"`
}

// Build returns the discovery topic and the retained config payload of
// in.Device. Ids are validated as everywhere (a skill id that cannot be a
// topic level is an error, as is a skill listed twice). The payload is
// deterministic: the same Input gives the same bytes.
func Build(in Input) (string, []byte, error) {
	t, cmps, err := topicAndComponents(in)
	if err != nil {
		return "", nil, err
	}
	payload, err := build(in, cmps)
	if err != nil {
		return "", nil, err
	}
	return t, payload, nil
}

// Replace is Build of the config that follows one whose live components
// were prev (as Components or Replace returned them): in.Withdrawn is
// replaced by the components of prev that are no longer live. It returns
// the new config's live components too (Components(in)), computed once
// with the config rather than a second time: Components was 55 MB of the
// gateway's allocations in a 10,000-device install (docs/benchmarks.md,
// issue 19, round five).
func Replace(in Input, prev map[string]string) (t string, payload []byte, live map[string]string, err error) {
	t, cmps, err := topicAndComponents(in)
	if err != nil {
		return "", nil, nil, err
	}
	live = make(map[string]string, len(cmps))
	for k, c := range cmps {
		live[k] = c.Platform
	}
	in.Withdrawn = map[string]string{}
	for k, p := range prev {
		if _, ok := cmps[k]; !ok {
			in.Withdrawn[k] = p
		}
	}
	if payload, err = build(in, cmps); err != nil {
		return "", nil, nil, err
	}
	return t, payload, live, nil
}

// topicAndComponents is the discovery topic of in.Device and the live
// components of its config, as Build and Replace start.
func topicAndComponents(in Input) (string, map[string]component, error) {
	t, err := topic.HADiscovery(prefixOr(in.Prefix), in.Device)
	if err != nil {
		return "", nil, fmt.Errorf("discovery config: %w", err)
	}
	cmps, err := components(in)
	if err != nil {
		return "", nil, fmt.Errorf("discovery config for %s: %w", in.Device, err)
	}
	return t, cmps, nil
}

// build encodes the config of in with its live components cmps (which it
// extends by in.Withdrawn).
func build(in Input, cmps map[string]component) ([]byte, error) {
	for key, p := range in.Withdrawn {
		if _, live := cmps[key]; live {
			continue
		}
		if !validKey(key) || !knownPlatform(p) {
			return nil, fmt.Errorf("discovery config for %s: withdrawn component %q (%q) is not one Build makes", in.Device, key, p)
		}
		cmps[key] = component{Platform: p}
	}
	avail, _ := topic.Availability(in.Device) // valid: HADiscovery checked the id
	c := config{
		Device: device{
			Identifiers: []string{DeviceIdentifier(in.Device)},
			Name:        or(in.Name, in.Device),
			Model:       Model,
			SWVersion:   in.AgentVersion,
			ViaDevice:   or(in.Gateway, DefaultGateway),
		},
		Origin:              origin{Name: OriginName, SWVersion: in.ChorusVersion, SupportURL: OriginURL},
		AvailabilityTopic:   avail,
		PayloadAvailable:    PayloadOnline,
		PayloadNotAvailable: PayloadOffline,
		Components:          cmps,
	}
	return c.encode(), nil // '>' of the templates kept readable: no HTML escaping
}

// Remove returns the discovery topic of device and the empty payload that,
// retained, removes the device and all its entities from Home Assistant. The
// topic is "" when prefix or device is invalid.
func Remove(prefix, device string) (string, []byte) {
	t, err := topic.HADiscovery(prefixOr(prefix), device)
	if err != nil {
		return "", nil
	}
	return t, []byte{}
}

// Components returns the live components Build puts in the config of in,
// key → platform: what a later config must withdraw when they are gone.
func Components(in Input) (map[string]string, error) {
	cmps, err := components(in)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cmps))
	for k, c := range cmps {
		out[k] = c.Platform
	}
	return out, nil
}

// DeviceIdentifier is the device's identifier in Home Assistant's device
// registry: chorus_<escaped id>, the same string as the discovery topic's
// object id. The reserved device id "gateway" makes DefaultGateway unique.
func DeviceIdentifier(dev string) string { return "chorus_" + topic.HAEscape(dev) }

func prefixOr(p string) string { return or(p, topic.DefaultHAPrefix) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
