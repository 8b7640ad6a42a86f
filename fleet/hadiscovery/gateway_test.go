package hadiscovery_test

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet/hadiscovery"
)

func gatewayInput() hadiscovery.GatewayInput {
	return hadiscovery.GatewayInput{ChorusVersion: "0.3.0"}
}

func buildGateway(t *testing.T, in hadiscovery.GatewayInput) (string, decoded, []byte) {
	t.Helper()
	topic, payload, err := hadiscovery.BuildGateway(in)
	if err != nil {
		t.Fatalf("BuildGateway: %v", err)
	}
	return topic, decode(t, payload), payload
}

func TestBuildGatewaySchema(t *testing.T) {
	cases := []struct {
		name string
		in   hadiscovery.GatewayInput
	}{
		{"defaults", hadiscovery.GatewayInput{}},
		{"versioned", gatewayInput()},
		{"named, other prefix", hadiscovery.GatewayInput{Name: "Hall gateway", Prefix: "ha/test", ChorusVersion: "1.0.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, d, _ := buildGateway(t, tc.in)
			checkSchema(t, d)
		})
	}
}

func TestBuildGatewayFields(t *testing.T) {
	topic, d, _ := buildGateway(t, gatewayInput())
	if want := "homeassistant/device/chorus_gateway/config"; topic != want {
		t.Errorf("topic = %q, want %q", topic, want)
	}
	// What every satellite names as via_device.
	_, sat, _ := build(t, kitchen())
	fields := []struct {
		name string
		got  any
		want any
	}{
		{"device identifiers", d.device["identifiers"], []any{"chorus_gateway"}},
		{"device identifiers = a satellite's via_device", d.device["identifiers"], []any{sat.device["via_device"]}},
		{"device name", d.device["name"], "Chorus gateway"},
		{"device model", d.device["model"], "Chorus gateway"},
		{"device sw_version", d.device["sw_version"], "0.3.0"},
		{"device via_device", d.device["via_device"], nil},
		{"origin name", d.origin["name"], "chorus"},
		{"origin sw_version", d.origin["sw_version"], "0.3.0"},
		{"origin support_url", d.origin["support_url"], hadiscovery.OriginURL},
		{"availability_topic", d.top["availability_topic"], "chorus/v1/gateway/availability"},
		{"payload_available", d.top["payload_available"], "online"},
		{"payload_not_available", d.top["payload_not_available"], "offline"},
	}
	for _, f := range fields {
		if !equalJSON(f.got, f.want) {
			t.Errorf("%s = %#v, want %#v", f.name, f.got, f.want)
		}
	}
	if _, d, _ := buildGateway(t, hadiscovery.GatewayInput{Name: "Hall"}); d.device["name"] != "Hall" || d.device["sw_version"] != nil {
		t.Errorf("named, unversioned device = %v", d.device)
	}
}

func TestBuildGatewayComponents(t *testing.T) {
	_, d, _ := buildGateway(t, gatewayInput())
	const state = "chorus/v1/gateway/fleet"
	sensor := func(name, uid, field string) map[string]any {
		return map[string]any{"platform": "sensor", "name": name, "unique_id": uid, "state_topic": state,
			"value_template": "{{ value_json." + field + " }}", "state_class": "measurement", "qos": 1}
	}
	want := map[string]map[string]any{
		"devices":         sensor("Devices", "chorus_gateway_devices", "devices"),
		"devices-online":  sensor("Devices online", "chorus_gateway_devices-online", "devices_online"),
		"skills-loaded":   sensor("Skills loaded", "chorus_gateway_skills-loaded", "skills_loaded"),
		"rollouts-active": sensor("Rollouts active", "chorus_gateway_rollouts-active", "rollouts_active"),
	}
	checkComponents(t, d.components, want)
}

// The gateway's unique ids never meet a satellite's, even for device ids
// built to look like them.
func TestGatewayUniqueIDsDistinct(t *testing.T) {
	_, gw, _ := buildGateway(t, gatewayInput())
	seen := map[string]bool{}
	for _, c := range gw.components {
		seen[c["unique_id"].(string)] = true
	}
	skills := []hadiscovery.Skill{{ID: "devices", Managed: true}, {ID: "online"}, {ID: "rollouts-active"}}
	for _, dev := range []string{"gateway_devices", "gateway.evices", "gateway-devices", "gateway_", "Gateway", "gateway_skills-loaded"} {
		_, d, _ := build(t, hadiscovery.Input{Device: dev, Skills: skills})
		for key, c := range d.components {
			if uid := c["unique_id"].(string); seen[uid] {
				t.Errorf("device %s component %s has the gateway's unique_id %q", dev, key, uid)
			}
		}
	}
}

func TestBuildGatewayRefuses(t *testing.T) {
	for _, prefix := range []string{"home/#", "ha/", "/ha"} {
		if topic, _, err := hadiscovery.BuildGateway(hadiscovery.GatewayInput{Prefix: prefix}); err == nil {
			t.Errorf("prefix %q accepted: %s", prefix, topic)
		}
	}
}

func TestGatewayGolden(t *testing.T) {
	_, _, payload := buildGateway(t, gatewayInput())
	checkGolden(t, payload, "gateway.json")
}
