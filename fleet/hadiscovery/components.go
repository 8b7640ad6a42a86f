package hadiscovery

import (
	"fmt"
	"strings"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// Component keys (the object ids inside cmps) and unique ids.
//
// Home Assistant accepts only [a-zA-Z0-9_-] in object ids, and a component's
// unique_id must be unique across the whole installation, so both are built
// injectively from topic.HAEscape, whose output never holds a '_' followed
// by anything but '_', 'd' or 'x':
//
//	key:       network | internet | gui | skills-loaded
//	           | switch_<HAEscape(skill)> | update_<HAEscape(skill)>
//	unique_id: chorus_<HAEscape(device)>_<key>
//
// The fixed keys never start with "switch_" or "update_", and no key starts
// with '_', 'd' or 'x', so the first '_' of a unique id that does not begin
// an escape ends the device part: distinct (device, key) pairs never share a
// unique id.
const (
	keyNetwork      = "network"
	keyInternet     = "internet"
	keyGUI          = "gui"
	keySkillsLoaded = "skills-loaded"
	switchPrefix    = "switch_"
	updatePrefix    = "update_"
)

// Value templates. Skill ids are [A-Za-z0-9._-], so one is safe inside a
// single-quoted Jinja string.
const skillsLoadedTemplate = "{{ value_json.skills | selectattr('state','eq','loaded') | list | count }}"

func connectivityTemplate(field string) string {
	return "{{ 'ON' if value_json." + field + " else 'OFF' }}"
}

func switchTemplate(skill string) string {
	return "{{ 'ON' if value_json.skills | selectattr('id','eq','" + skill +
		"') | selectattr('active') | list | count > 0 else 'OFF' }}"
}

// components returns the live components of in's config, keyed by object id.
func components(in Input) (map[string]map[string]any, error) {
	dev := in.Device
	conn, err := topic.Connectivity(dev)
	if err != nil {
		return nil, err
	}
	skills, _ := topic.Skills(dev)
	uid := func(key string) string { return DeviceIdentifier(dev) + "_" + key }
	binary := func(key, name, field, class string) map[string]any {
		c := map[string]any{
			"platform": PlatformBinarySensor, "name": name, "unique_id": uid(key),
			"state_topic": conn, "value_template": connectivityTemplate(field),
			"payload_on": PayloadOn, "payload_off": PayloadOff,
			"entity_category": "diagnostic", "qos": 1,
		}
		if class != "" {
			c["device_class"] = class
		}
		return c
	}
	out := map[string]map[string]any{
		keyNetwork:  binary(keyNetwork, "Network", "network", "connectivity"),
		keyInternet: binary(keyInternet, "Internet", "internet", "connectivity"),
		keyGUI:      binary(keyGUI, "GUI", "gui", ""),
		keySkillsLoaded: {
			"platform": PlatformSensor, "name": "Skills loaded", "unique_id": uid(keySkillsLoaded),
			"state_topic": skills, "value_template": skillsLoadedTemplate,
			"state_class": "measurement", "icon": "mdi:puzzle", "entity_category": "diagnostic", "qos": 1,
		},
	}
	for _, s := range in.Skills {
		if err := addSkill(out, dev, s, skills, uid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func addSkill(out map[string]map[string]any, dev string, s Skill, skills string, uid func(string) string) error {
	set, err := topic.SkillSet(dev, s.ID)
	if err != nil {
		return err
	}
	key := switchPrefix + topic.HAEscape(s.ID)
	if _, dup := out[key]; dup {
		return fmt.Errorf("skill %s listed twice", s.ID)
	}
	title := or(s.Title, s.ID)
	out[key] = map[string]any{
		"platform": PlatformSwitch, "name": title, "unique_id": uid(key),
		"state_topic": skills, "value_template": switchTemplate(s.ID),
		"state_on": PayloadOn, "state_off": PayloadOff,
		"command_topic": set, "payload_on": PayloadOn, "payload_off": PayloadOff,
		"icon": "mdi:puzzle", "qos": 1, "retain": false,
	}
	if !s.Managed {
		return nil
	}
	state, _ := topic.SkillUpdate(dev, s.ID)
	install, _ := topic.SkillUpdateSet(dev, s.ID)
	key = updatePrefix + topic.HAEscape(s.ID)
	out[key] = map[string]any{
		"platform": PlatformUpdate, "name": title + " update", "unique_id": uid(key),
		"state_topic": state, "command_topic": install, "payload_install": PayloadInstall,
		"entity_category": "config", "qos": 1, "retain": false,
	}
	return nil
}

// validKey reports whether key is one components could have made.
func validKey(key string) bool {
	switch key {
	case keyNetwork, keyInternet, keyGUI, keySkillsLoaded:
		return true
	}
	for _, p := range []string{switchPrefix, updatePrefix} {
		if esc, ok := strings.CutPrefix(key, p); ok {
			id, err := topic.HAUnescape(esc)
			return err == nil && topic.ValidSkillID(id) == nil
		}
	}
	return false
}

func knownPlatform(p string) bool {
	switch p {
	case PlatformBinarySensor, PlatformSensor, PlatformSwitch, PlatformUpdate:
		return true
	}
	return false
}
