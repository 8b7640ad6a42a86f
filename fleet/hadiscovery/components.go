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

// component is one entry of cmps, with Home Assistant's full key names in
// the comments. Empty strings are left out when encoded, and so is QoS
// when Retain is nil: a withdrawn component is its platform alone
// (encode.go writes the keys abbreviated, in encoding/json's map order).
type component struct {
	Platform       string // platform
	Name           string // name
	UniqueID       string // unique_id
	StateTopic     string // state_topic
	ValueTemplate  string // value_template
	PayloadOn      string // payload_on
	PayloadOff     string // payload_off
	StateOn        string // state_on
	StateOff       string // state_off
	CommandTopic   string // command_topic
	PayloadInstall string // payload_install
	DeviceClass    string // device_class
	EntityCategory string // entity_category
	Icon           string // icon
	StateClass     string // state_class
	QoS            int    // qos; 0 (only a withdrawn component) leaves it out
	Retain         *bool  // retain; nil leaves it out
}

var retainFalse = false

// components returns the live components of in's config, keyed by object id.
func components(in Input) (map[string]component, error) {
	dev := in.Device
	conn, err := topic.Connectivity(dev)
	if err != nil {
		return nil, err
	}
	skills, _ := topic.Skills(dev) // valid: Connectivity checked the id
	id := DeviceIdentifier(dev)
	uid := func(key string) string { return id + "_" + key }
	binary := func(key, name, field, class string) component {
		return component{
			Platform: PlatformBinarySensor, Name: name, UniqueID: uid(key),
			StateTopic: conn, ValueTemplate: connectivityTemplate(field),
			PayloadOn: PayloadOn, PayloadOff: PayloadOff, DeviceClass: class,
			EntityCategory: "diagnostic", QoS: 1,
		}
	}
	out := make(map[string]component, 4+2*len(in.Skills))
	out[keyNetwork] = binary(keyNetwork, "Network", "network", "connectivity")
	out[keyInternet] = binary(keyInternet, "Internet", "internet", "connectivity")
	out[keyGUI] = binary(keyGUI, "GUI", "gui", "")
	out[keySkillsLoaded] = component{
		Platform: PlatformSensor, Name: "Skills loaded", UniqueID: uid(keySkillsLoaded),
		StateTopic: skills, ValueTemplate: skillsLoadedTemplate,
		StateClass: "measurement", Icon: "mdi:puzzle", EntityCategory: "diagnostic", QoS: 1,
	}
	for _, s := range in.Skills {
		if err := addSkill(out, dev, s, skills, uid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addSkill adds the switch of skill s and, for a fleet-managed one, its
// update entity.
func addSkill(out map[string]component, dev string, s Skill, skills string, uid func(string) string) error {
	set, err := topic.SkillSet(dev, s.ID)
	if err != nil {
		return err
	}
	esc := topic.HAEscape(s.ID)
	key := switchPrefix + esc
	if _, dup := out[key]; dup {
		return fmt.Errorf("skill %s listed twice", s.ID)
	}
	title := or(s.Title, s.ID)
	out[key] = component{
		Platform: PlatformSwitch, Name: title, UniqueID: uid(key),
		StateTopic: skills, ValueTemplate: switchTemplate(s.ID),
		StateOn: PayloadOn, StateOff: PayloadOff,
		CommandTopic: set, PayloadOn: PayloadOn, PayloadOff: PayloadOff,
		Icon: "mdi:puzzle", QoS: 1, Retain: &retainFalse,
	}
	if !s.Managed {
		return nil
	}
	state, _ := topic.SkillUpdate(dev, s.ID)
	install, _ := topic.SkillUpdateSet(dev, s.ID)
	key = updatePrefix + esc
	out[key] = component{
		Platform: PlatformUpdate, Name: title + " update", UniqueID: uid(key),
		StateTopic: state, CommandTopic: install, PayloadInstall: PayloadInstall,
		EntityCategory: "config", QoS: 1, Retain: &retainFalse,
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
