package hadiscovery

import (
	"bytes"
	"encoding/json"
	"testing"
)

// asMap is c as the map of full key names Build made before encode.go,
// empty strings, a zero QoS and a nil Retain left out.
func asMap(c component) map[string]any {
	m := map[string]any{}
	for k, v := range map[string]string{
		"platform": c.Platform, "name": c.Name, "unique_id": c.UniqueID, "state_topic": c.StateTopic,
		"value_template": c.ValueTemplate, "payload_on": c.PayloadOn, "payload_off": c.PayloadOff,
		"state_on": c.StateOn, "state_off": c.StateOff, "command_topic": c.CommandTopic,
		"payload_install": c.PayloadInstall, "device_class": c.DeviceClass, "entity_category": c.EntityCategory,
		"icon": c.Icon, "state_class": c.StateClass,
	} {
		if v != "" {
			m[k] = v
		}
	}
	if c.QoS != 0 {
		m["qos"] = c.QoS
	}
	if c.Retain != nil {
		m["retain"] = *c.Retain
	}
	return m
}

// jsonConfig is what encode must write, by encoding/json: the config with
// its components as maps, keys abbreviated, without HTML escaping.
func jsonConfig(t *testing.T, c config) []byte {
	t.Helper()
	type jsonConfig struct {
		Device              device                    `json:"dev"`
		Origin              origin                    `json:"o"`
		AvailabilityTopic   string                    `json:"avty_t"`
		PayloadAvailable    string                    `json:"pl_avail"`
		PayloadNotAvailable string                    `json:"pl_not_avail"`
		Components          map[string]map[string]any `json:"cmps"`
	}
	abbr := make(map[string]map[string]any, len(c.Components))
	for k, cmp := range c.Components {
		out := map[string]any{}
		for f, v := range asMap(cmp) {
			if a, ok := abbreviations[f]; ok {
				f = a
			}
			out[f] = v
		}
		abbr[k] = out
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonConfig{c.Device, c.Origin, c.AvailabilityTopic, c.PayloadAvailable, c.PayloadNotAvailable, abbr}); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestEncodeMatchesJSON: the hand-written encoder gives encoding/json's
// bytes for the configs Build and BuildGateway make, with titles and
// versions holding every character class JSON escapes (quotes, backslash,
// control characters, HTML characters, U+2028/U+2029, invalid UTF-8,
// multi-byte runes), and with the optional fields left out.
func TestEncodeMatchesJSON(t *testing.T) {
	t.Parallel()
	odd := "a\"b\\c\x00\x01\x1f\b\f\n\r\t<>&'\u2028\u2029é☃\xff\xfe𝄞 end"
	cases := map[string]Input{
		"plain": {Device: "kitchen", AgentVersion: "1.2.0", ChorusVersion: "0.9.0",
			Skills: []Skill{{ID: "weather", Title: "Weather", Managed: true}, {ID: "timer"}}},
		"odd strings": {Device: "kitchen", Name: odd, AgentVersion: odd, ChorusVersion: odd, Gateway: odd,
			Skills: []Skill{{ID: "weather", Title: odd, Managed: true}, {ID: "x.y-z_0", Title: odd}}},
		"optional fields empty": {Device: "pi-2", Skills: nil},
		"withdrawn": {Device: "pi-3", Skills: []Skill{{ID: "a"}},
			Withdrawn: map[string]string{"switch_b": PlatformSwitch, "update_b": PlatformUpdate}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, got, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			// The same config, encoded by encoding/json.
			cmps, err := components(in)
			if err != nil {
				t.Fatal(err)
			}
			for k, p := range in.Withdrawn {
				cmps[k] = component{Platform: p}
			}
			c := config{Device: device{Identifiers: []string{DeviceIdentifier(in.Device)}, Name: or(in.Name, in.Device),
				Model: Model, SWVersion: in.AgentVersion, ViaDevice: or(in.Gateway, DefaultGateway)},
				Origin:            origin{Name: OriginName, SWVersion: in.ChorusVersion, SupportURL: OriginURL},
				AvailabilityTopic: "chorus/v1/" + in.Device + "/availability", PayloadAvailable: PayloadOnline,
				PayloadNotAvailable: PayloadOffline, Components: cmps}
			if want := jsonConfig(t, c); !bytes.Equal(got, want) {
				t.Fatalf("encode:\n%s\nencoding/json:\n%s", got, want)
			}
		})
	}
	for _, name := range []string{"", odd} {
		_, got, err := BuildGateway(GatewayInput{Name: name, ChorusVersion: name})
		if err != nil {
			t.Fatal(err)
		}
		c := config{Device: device{Identifiers: []string{DefaultGateway}, Name: or(name, GatewayModel), Model: GatewayModel, SWVersion: name},
			Origin: origin{Name: OriginName, SWVersion: name, SupportURL: OriginURL}, AvailabilityTopic: "chorus/v1/gateway/availability",
			PayloadAvailable: PayloadOnline, PayloadNotAvailable: PayloadOffline, Components: gatewayComponents()}
		if want := jsonConfig(t, c); !bytes.Equal(got, want) {
			t.Fatalf("gateway %q: encode:\n%s\nencoding/json:\n%s", name, got, want)
		}
	}
}
