// Package topic owns the MQTT topic tree of ARCHITECTURE.md §3: every topic
// string Chorus publishes or subscribes to is built, parsed or matched here,
// so no other package formats one by hand.
//
// Builders validate their ids (ValidDeviceID, ValidSkillID) and message types
// (ValidLevel) and return an error saying what was refused; a nil error
// guarantees Parse gives the inputs back.
package topic

import "fmt"

// Root is the prefix of every Chorus topic.
const Root = "chorus/v1"

// AnyDevice may stand for the device in BusTypeFilter.
const AnyDevice = "+"

// Fixed topics and filters over all devices. Note that the '+' in the
// All* state filters also matches the gateway's own topic
// chorus/v1/gateway/availability.
const (
	GatewayAvailability = Root + "/gateway/availability"
	// GatewayFleet is the controller's retained fleet summary (counts of
	// devices, skills and rollouts), the state of the gateway's Home
	// Assistant sensors.
	GatewayFleet = Root + "/gateway/fleet"

	AllBus            = Root + "/+/bus/+"
	AllAvailability   = Root + "/+/availability"
	AllBirth          = Root + "/+/birth"
	AllConnectivity   = Root + "/+/connectivity"
	AllSkills         = Root + "/+/skills"
	AllDesired        = Root + "/+/desired"
	AllSkillSet       = Root + "/+/skill/+/set"
	AllSkillUpdate    = Root + "/+/skill/+/update"
	AllSkillUpdateSet = Root + "/+/skill/+/update/set"
)

// Availability is chorus/v1/<dev>/availability (retained, online/offline).
func Availability(dev string) (string, error) { return deviceTopic(dev, "availability") }

// Birth is chorus/v1/<dev>/birth (retained).
func Birth(dev string) (string, error) { return deviceTopic(dev, "birth") }

// Connectivity is chorus/v1/<dev>/connectivity (retained).
func Connectivity(dev string) (string, error) { return deviceTopic(dev, "connectivity") }

// Skills is chorus/v1/<dev>/skills (retained).
func Skills(dev string) (string, error) { return deviceTopic(dev, "skills") }

// Desired is chorus/v1/<dev>/desired (retained, written by the controller).
func Desired(dev string) (string, error) { return deviceTopic(dev, "desired") }

// BusPrefix is chorus/v1/<dev>/bus/, the device bus subtree (BUS.md §2).
func BusPrefix(dev string) (string, error) { return deviceTopic(dev, "bus/") }

// BusFilter is chorus/v1/<dev>/bus/+: every message on the device's bus.
func BusFilter(dev string) (string, error) { return deviceTopic(dev, "bus/+") }

// DeviceFilter is chorus/v1/<dev>/#: everything about one device.
func DeviceFilter(dev string) (string, error) { return deviceTopic(dev, "#") }

// Bus is chorus/v1/<dev>/bus/<msgType>, msgType as ONE level: a type never
// splits into levels (ARCHITECTURE.md §3), so one holding '/', '+', '#' or
// NUL is refused, as is a topic over the MQTT length limit.
func Bus(dev, msgType string) (string, error) {
	if err := ValidLevel(msgType); err != nil {
		return "", fmt.Errorf("bus topic for device %q: %w", dev, err)
	}
	t, err := deviceTopic(dev, "bus/"+msgType)
	if err == nil && len(t) > maxTopicLen {
		return "", fmt.Errorf("bus topic for device %q: %d bytes, over the MQTT limit of %d", dev, len(t), maxTopicLen)
	}
	return t, err
}

// BusTypeFilter is the filter for messages of msgType on dev's bus; dev may
// be AnyDevice ("+") to match that type on every device's bus.
func BusTypeFilter(dev, msgType string) (string, error) {
	if dev == AnyDevice {
		if err := ValidLevel(msgType); err != nil {
			return "", fmt.Errorf("bus filter: %w", err)
		}
		return Root + "/+/bus/" + msgType, nil
	}
	return Bus(dev, msgType)
}

// SkillSet is chorus/v1/<dev>/skill/<skill>/set (ON/OFF, never retained).
func SkillSet(dev, skill string) (string, error) { return skillTopic(dev, skill, "set") }

// SkillUpdate is chorus/v1/<dev>/skill/<skill>/update (retained, Home
// Assistant update state).
func SkillUpdate(dev, skill string) (string, error) { return skillTopic(dev, skill, "update") }

// SkillUpdateSet is chorus/v1/<dev>/skill/<skill>/update/set ("install").
func SkillUpdateSet(dev, skill string) (string, error) {
	return skillTopic(dev, skill, "update/set")
}

func deviceTopic(dev, suffix string) (string, error) {
	if err := ValidDeviceID(dev); err != nil {
		return "", fmt.Errorf("topic %s/<device>/%s: %w", Root, suffix, err)
	}
	return Root + "/" + dev + "/" + suffix, nil
}

func skillTopic(dev, skill, suffix string) (string, error) {
	if err := ValidSkillID(skill); err != nil {
		return "", fmt.Errorf("topic %s/%s/skill/<skill>/%s: %w", Root, dev, suffix, err)
	}
	return deviceTopic(dev, "skill/"+skill+"/"+suffix)
}
