package hadiscovery

import (
	"encoding/json"
	"fmt"
)

// Home Assistant's abbreviations of discovery keys (the MQTT integration's
// "supported abbreviations in MQTT discovery messages"; abbreviations.py),
// full name → abbreviation, for the keys Build writes. Home Assistant expands
// them before validating (discovery.py): the top-level and component keys
// with the first table, the device block's with the second, the origin's
// with the third. A config per device is retained on the broker for as long
// as the device exists, so its size is memory per device on the gateway and
// on every subscriber: the abbreviated form is about a third smaller.
// Keys without an abbreviation (name, qos, via_device) stay as they are.
var (
	abbreviations = map[string]string{
		"availability_topic": "avty_t", "payload_available": "pl_avail", "payload_not_available": "pl_not_avail",
		"device": "dev", "origin": "o", "components": "cmps", "platform": "p",
		"state_topic": "stat_t", "command_topic": "cmd_t", "unique_id": "uniq_id", "value_template": "val_tpl",
		"payload_on": "pl_on", "payload_off": "pl_off", "state_on": "stat_on", "state_off": "stat_off",
		"payload_install": "pl_inst", "device_class": "dev_cla", "entity_category": "ent_cat",
		"icon": "ic", "state_class": "stat_cla", "retain": "ret",
	}
	deviceAbbreviations = map[string]string{"identifiers": "ids", "model": "mdl", "sw_version": "sw"}
	originAbbreviations = map[string]string{"sw_version": "sw", "support_url": "url"}
)

// Expand decodes a discovery config as Home Assistant does: abbreviated keys
// back to their full names, at the top level, in the device and origin
// blocks and in every component. For readers that want the full form (tests,
// tools); an empty payload (a removal) gives nil.
func Expand(payload []byte) (map[string]any, error) {
	if len(payload) == 0 {
		return nil, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, fmt.Errorf("discovery config: %w", err)
	}
	top := expandKeys(raw, abbreviations)
	if d, ok := top["device"].(map[string]any); ok {
		top["device"] = expandKeys(d, deviceAbbreviations)
	}
	if o, ok := top["origin"].(map[string]any); ok {
		top["origin"] = expandKeys(o, originAbbreviations)
	}
	if cs, ok := top["components"].(map[string]any); ok {
		for k, v := range cs {
			if c, ok := v.(map[string]any); ok {
				cs[k] = expandKeys(c, abbreviations)
			}
		}
	}
	return top, nil
}

func expandKeys(m map[string]any, full2abbr map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		for f, a := range full2abbr {
			if a == k {
				k = f
				break
			}
		}
		out[k] = v
	}
	return out
}

// ExpandJSON is Expand re-encoded as JSON.
func ExpandJSON(payload []byte) ([]byte, error) {
	m, err := Expand(payload)
	if err != nil || m == nil {
		return nil, err
	}
	return json.Marshal(m)
}
