package hadiscovery

import (
	"fmt"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// GatewayModel is the model of the gateway's own device, the one every
// satellite's via_device names.
const GatewayModel = "Chorus gateway"

// GatewayInput is what the gateway's own config is built from.
type GatewayInput struct {
	Prefix        string // discovery prefix; "" = topic.DefaultHAPrefix
	Name          string // device name in Home Assistant; "" = GatewayModel
	ChorusVersion string // dev.sw_version and o.sw_version; "" leaves them out
}

// Gateway component keys. Their unique ids are DefaultGateway_<key>. A
// satellite's unique id is chorus_<HAEscape(device)>_<device key>, and
// "gateway" is a reserved device id, so the two can only meet if a device
// key followed the first '_' of "gateway_<gateway key>"; none of these is a
// device key (components.go), so they never do.
const (
	keyGatewayDevices  = "devices"
	keyGatewayOnline   = "devices-online"
	keyGatewaySkills   = "skills-loaded"
	keyGatewayRollouts = "rollouts-active"
)

// The fields of the gateway's fleet summary (chorus/v1/gateway/fleet,
// docs/topics.md) that the gateway's sensors read.
const (
	FieldDevices        = "devices"
	FieldDevicesOnline  = "devices_online"
	FieldSkillsLoaded   = "skills_loaded"
	FieldRolloutsActive = "rollouts_active"
)

// BuildGateway returns the discovery topic and the retained config payload
// of the gateway itself: the device every satellite names as via_device,
// with sensors over the fleet summary the controller publishes, and the
// gateway's own availability. Deterministic, like Build.
func BuildGateway(in GatewayInput) (string, []byte, error) {
	t, err := topic.HAGatewayDiscovery(prefixOr(in.Prefix))
	if err != nil {
		return "", nil, fmt.Errorf("gateway discovery config: %w", err)
	}
	c := config{
		Device: device{
			Identifiers: []string{DefaultGateway},
			Name:        or(in.Name, GatewayModel),
			Model:       GatewayModel,
			SWVersion:   in.ChorusVersion,
		},
		Origin:              origin{Name: OriginName, SWVersion: in.ChorusVersion, SupportURL: OriginURL},
		AvailabilityTopic:   topic.GatewayAvailability,
		PayloadAvailable:    PayloadOnline,
		PayloadNotAvailable: PayloadOffline,
		Components:          gatewayComponents(),
	}
	return t, c.encode(), nil
}

func gatewayComponents() map[string]component {
	sensor := func(key, name, field, icon string) component {
		return component{
			Platform: PlatformSensor, Name: name, UniqueID: DefaultGateway + "_" + key,
			StateTopic: topic.GatewayFleet, ValueTemplate: "{{ value_json." + field + " }}",
			StateClass: "measurement", Icon: icon, QoS: 1,
		}
	}
	return map[string]component{
		keyGatewayDevices:  sensor(keyGatewayDevices, "Devices", FieldDevices, "mdi:devices"),
		keyGatewayOnline:   sensor(keyGatewayOnline, "Devices online", FieldDevicesOnline, "mdi:access-point-network"),
		keyGatewaySkills:   sensor(keyGatewaySkills, "Skills loaded", FieldSkillsLoaded, "mdi:puzzle"),
		keyGatewayRollouts: sensor(keyGatewayRollouts, "Rollouts active", FieldRolloutsActive, "mdi:progress-upload"),
	}
}
