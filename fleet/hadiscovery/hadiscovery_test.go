package hadiscovery_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/hadiscovery"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The key sets of Home Assistant's device discovery schema
// (homeassistant/components/mqtt/schemas.py): DEVICE_DISCOVERY_SCHEMA at the
// top level, MQTT_ENTITY_DEVICE_INFO_SCHEMA in "device",
// MQTT_ORIGIN_INFO_SCHEMA in "origin". Any other key rejects the message.
var (
	topKeys = set("availability", "availability_mode", "availability_template", "availability_topic",
		"payload_available", "payload_not_available", "device", "components", "origin",
		"state_topic", "command_topic", "qos", "encoding")
	deviceKeys = set("identifiers", "connections", "manufacturer", "model", "model_id", "name",
		"hw_version", "serial_number", "sw_version", "via_device", "suggested_area", "configuration_url")
	originKeys = set("name", "sw_version", "support_url")
)

// Home Assistant's abbreviations (abbreviations.py) of the keys that can
// appear here, expanded before validation as discovery.py does.
var (
	abbrev = map[string]string{"dev": "device", "o": "origin", "cmps": "components", "p": "platform",
		"avty_t": "availability_topic", "pl_avail": "payload_available", "pl_not_avail": "payload_not_available",
		"stat_t": "state_topic", "cmd_t": "command_topic", "uniq_id": "unique_id", "val_tpl": "value_template",
		"pl_on": "payload_on", "pl_off": "payload_off", "stat_on": "state_on", "stat_off": "state_off",
		"pl_inst": "payload_install", "dev_cla": "device_class", "ent_cat": "entity_category", "ic": "icon",
		"stat_cla": "state_class", "ret": "retain"}
	deviceAbbrev = map[string]string{"ids": "identifiers", "cns": "connections", "mf": "manufacturer",
		"mdl": "model", "mdl_id": "model_id", "hw": "hw_version", "sn": "serial_number", "sw": "sw_version",
		"sa": "suggested_area", "cu": "configuration_url"}
	originAbbrev = map[string]string{"sw": "sw_version", "url": "support_url"}
)

// requiredByPlatform: what Home Assistant needs of each platform we use.
var requiredByPlatform = map[string][]string{
	"binary_sensor": {"state_topic"},
	"sensor":        {"state_topic"},
	"switch":        {"command_topic"},
	"update":        {"state_topic"},
}

var objectID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func expand(m map[string]any, abbr map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if full, ok := abbr[k]; ok {
			k = full
		}
		out[k] = v
	}
	return out
}

// decoded is a config as Home Assistant sees it after expanding abbreviations.
type decoded struct {
	top        map[string]any
	device     map[string]any
	origin     map[string]any
	components map[string]map[string]any
}

func decode(t *testing.T, payload []byte) decoded {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(payload, &raw); err != nil {
		t.Fatalf("payload is not a JSON object: %v\n%s", err, payload)
	}
	d := decoded{top: expand(raw, abbrev), components: map[string]map[string]any{}}
	d.device, _ = d.top["device"].(map[string]any)
	d.origin, _ = d.top["origin"].(map[string]any)
	d.device, d.origin = expand(d.device, deviceAbbrev), expand(d.origin, originAbbrev)
	cmps, ok := d.top["components"].(map[string]any)
	if !ok {
		t.Fatalf("no components object: %s", payload)
	}
	for k, v := range cmps {
		c, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("component %s is not an object", k)
		}
		d.components[k] = expand(c, abbrev)
	}
	return d
}

// checkSchema checks a decoded config against Home Assistant's rules.
func checkSchema(t *testing.T, d decoded) {
	t.Helper()
	onlyKeys(t, "top level", d.top, topKeys)
	onlyKeys(t, "device", d.device, deviceKeys)
	onlyKeys(t, "origin", d.origin, originKeys)
	if ids, _ := d.device["identifiers"].([]any); len(ids) == 0 {
		t.Errorf("device has no identifiers: %v", d.device)
	}
	if s, _ := d.origin["name"].(string); s == "" {
		t.Errorf("origin has no name: %v", d.origin)
	}
	for key, c := range d.components {
		if !objectID.MatchString(key) {
			t.Errorf("component key %q: not [a-zA-Z0-9_-]", key)
		}
		p, _ := c["platform"].(string)
		req, known := requiredByPlatform[p]
		if !known {
			t.Errorf("component %s: platform %q", key, c["platform"])
			continue
		}
		for _, k := range append([]string{"unique_id"}, req...) {
			if s, _ := c[k].(string); s == "" {
				t.Errorf("component %s (%s): no %s", key, p, k)
			}
		}
		if _, cmd := c["command_topic"]; p == "update" && cmd && c["payload_install"] == nil {
			t.Errorf("component %s: update with a command topic and no payload_install", key)
		}
	}
}

func onlyKeys(t *testing.T, what string, m map[string]any, allowed map[string]bool) {
	t.Helper()
	for k := range m {
		if !allowed[k] {
			t.Errorf("%s: key %q is not in Home Assistant's schema (the config would be rejected)", what, k)
		}
	}
}

func kitchen() hadiscovery.Input {
	return hadiscovery.Input{
		Device: "pi.kitchen_1", Name: "Kitchen", AgentVersion: "0.3.0", ChorusVersion: "0.3.0",
		Skills: []hadiscovery.Skill{
			{ID: "hello.chorus", Title: "Hello", Managed: true},
			{ID: "weather_skill"},
		},
	}
}

func build(t *testing.T, in hadiscovery.Input) (string, decoded, []byte) {
	t.Helper()
	topic, payload, err := hadiscovery.Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return topic, decode(t, payload), payload
}

func TestBuildSchema(t *testing.T) {
	cases := []struct {
		name string
		in   hadiscovery.Input
	}{
		{"no skills", hadiscovery.Input{Device: "pi-1"}},
		{"kitchen", kitchen()},
		{"every id escape", hadiscovery.Input{Device: "a_b.c-d", Prefix: "ha/test", Skills: []hadiscovery.Skill{
			{ID: "x"}, {ID: "x.y", Managed: true}, {ID: "x_y", Managed: true}, {ID: "x__y"}, {ID: "x_dy"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, d, _ := build(t, tc.in)
			checkSchema(t, d)
		})
	}
}

func TestBuildFields(t *testing.T) {
	topic, d, _ := build(t, kitchen())
	if want := "homeassistant/device/chorus_pi_dkitchen__1/config"; topic != want {
		t.Errorf("topic = %q, want %q", topic, want)
	}
	fields := []struct {
		name string
		got  any
		want any
	}{
		{"device identifiers", d.device["identifiers"], []any{"chorus_pi_dkitchen__1"}},
		{"device name", d.device["name"], "Kitchen"},
		{"device model", d.device["model"], "Chorus satellite"},
		{"device sw_version", d.device["sw_version"], "0.3.0"},
		{"device via_device", d.device["via_device"], "chorus_gateway"},
		{"origin name", d.origin["name"], "chorus"},
		{"origin sw_version", d.origin["sw_version"], "0.3.0"},
		{"origin support_url", d.origin["support_url"], hadiscovery.OriginURL},
		{"availability_topic", d.top["availability_topic"], "chorus/v1/pi.kitchen_1/availability"},
		{"payload_available", d.top["payload_available"], "online"},
		{"payload_not_available", d.top["payload_not_available"], "offline"},
	}
	for _, f := range fields {
		if !equalJSON(f.got, f.want) {
			t.Errorf("%s = %#v, want %#v", f.name, f.got, f.want)
		}
	}
}

func TestBuildComponents(t *testing.T) {
	_, d, _ := build(t, kitchen())
	const conn, skills = "chorus/v1/pi.kitchen_1/connectivity", "chorus/v1/pi.kitchen_1/skills"
	want := map[string]map[string]any{
		"network": {"platform": "binary_sensor", "unique_id": "chorus_pi_dkitchen__1_network", "state_topic": conn,
			"value_template": "{{ 'ON' if value_json.network else 'OFF' }}", "device_class": "connectivity"},
		"internet": {"platform": "binary_sensor", "unique_id": "chorus_pi_dkitchen__1_internet", "state_topic": conn,
			"value_template": "{{ 'ON' if value_json.internet else 'OFF' }}", "device_class": "connectivity"},
		"gui": {"platform": "binary_sensor", "unique_id": "chorus_pi_dkitchen__1_gui", "state_topic": conn,
			"value_template": "{{ 'ON' if value_json.gui else 'OFF' }}"},
		"skills-loaded": {"platform": "sensor", "unique_id": "chorus_pi_dkitchen__1_skills-loaded", "state_topic": skills,
			"value_template": "{{ value_json.skills | selectattr('state','eq','loaded') | list | count }}"},
		"switch_hello_dchorus": {"platform": "switch", "name": "Hello", "unique_id": "chorus_pi_dkitchen__1_switch_hello_dchorus",
			"state_topic": skills, "command_topic": "chorus/v1/pi.kitchen_1/skill/hello.chorus/set",
			"payload_on": "ON", "payload_off": "OFF", "state_on": "ON", "state_off": "OFF",
			"value_template": "{{ 'ON' if value_json.skills | selectattr('id','eq','hello.chorus') | selectattr('active') | list | count > 0 else 'OFF' }}"},
		"update_hello_dchorus": {"platform": "update", "name": "Hello update", "unique_id": "chorus_pi_dkitchen__1_update_hello_dchorus",
			"state_topic":   "chorus/v1/pi.kitchen_1/skill/hello.chorus/update",
			"command_topic": "chorus/v1/pi.kitchen_1/skill/hello.chorus/update/set", "payload_install": "install"},
		"switch_weather__skill": {"platform": "switch", "name": "weather_skill", "unique_id": "chorus_pi_dkitchen__1_switch_weather__skill",
			"command_topic": "chorus/v1/pi.kitchen_1/skill/weather_skill/set"},
	}
	checkComponents(t, d.components, want)
	if _, ok := d.components["update_weather__skill"]; ok {
		t.Error("an unmanaged skill got an update entity")
	}
}

// Unique ids are unique across devices and skills whose ids differ only by
// the characters the escape maps ('.', '_').
func TestUniqueIDsUnique(t *testing.T) {
	skills := []hadiscovery.Skill{{ID: "d", Managed: true}, {ID: "x.y", Managed: true}, {ID: "x_y", Managed: true},
		{ID: "x_dy", Managed: true}, {ID: "x__y"}, {ID: "x_.y"}, {ID: "network"}, {ID: "gui"}}
	seen := map[string]string{}
	keySeen := map[string]bool{}
	for _, dev := range []string{"a", "a_d", "a.d", "a_", "a_.", "a__d", "a-d", "a_switch"} {
		topic, d, _ := build(t, hadiscovery.Input{Device: dev, Skills: skills})
		if keySeen[topic] {
			t.Errorf("discovery topic %s used twice", topic)
		}
		keySeen[topic] = true
		for key, c := range d.components {
			uid := c["unique_id"].(string)
			if !objectID.MatchString(uid) {
				t.Errorf("unique_id %q: not [a-zA-Z0-9_-]", uid)
			}
			if prev, dup := seen[uid]; dup {
				t.Errorf("unique_id %q of %s/%s already used by %s", uid, dev, key, prev)
			}
			seen[uid] = dev + "/" + key
		}
	}
}

func TestWithdrawn(t *testing.T) {
	in := kitchen()
	live, err := hadiscovery.Components(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Withdrawn = map[string]string{
		"switch_old_dskill": "switch", "update_old_dskill": "update",
		"switch_hello_dchorus": "switch", // still live: stays a full component
	}
	_, d, _ := build(t, in)
	for _, key := range []string{"switch_old_dskill", "update_old_dskill"} {
		c := d.components[key]
		if len(c) != 1 || c["platform"] != in.Withdrawn[key] {
			t.Errorf("withdrawn %s = %v, want only its platform", key, c)
		}
	}
	if c := d.components["switch_hello_dchorus"]; c["command_topic"] == nil {
		t.Errorf("a live component listed as withdrawn lost its config: %v", c)
	}
	if len(d.components) != len(live)+2 {
		t.Errorf("%d components, want %d live + 2 withdrawn", len(d.components), len(live))
	}
	for _, bad := range []map[string]string{{"switch_bad key": "switch"}, {"weird": "switch"}, {"switch_x": "light"}} {
		in.Withdrawn = bad
		if _, _, err := hadiscovery.Build(in); err == nil {
			t.Errorf("withdrawn %v accepted", bad)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	cases := []struct {
		name string
		in   hadiscovery.Input
	}{
		{"reserved device", hadiscovery.Input{Device: "gateway"}},
		{"bad device", hadiscovery.Input{Device: "a/b"}},
		{"empty device", hadiscovery.Input{}},
		{"bad prefix", hadiscovery.Input{Device: "pi-1", Prefix: "home/#"}},
		{"bad skill", hadiscovery.Input{Device: "pi-1", Skills: []hadiscovery.Skill{{ID: "bad id"}}}},
		{"skill twice", hadiscovery.Input{Device: "pi-1", Skills: []hadiscovery.Skill{{ID: "a"}, {ID: "a", Managed: true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if topic, _, err := hadiscovery.Build(tc.in); err == nil {
				t.Fatalf("Build accepted it: %s", topic)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	topic, payload := hadiscovery.Remove("", "pi.kitchen_1")
	if topic != "homeassistant/device/chorus_pi_dkitchen__1/config" || payload == nil || len(payload) != 0 {
		t.Fatalf("Remove = %q %q", topic, payload)
	}
	if topic, _ := hadiscovery.Remove("ha", "gateway"); topic != "" {
		t.Fatalf("Remove of the reserved id = %q", topic)
	}
}

func TestBuildDeterministic(t *testing.T) {
	_, _, a := build(t, kitchen())
	in := kitchen()
	slices.Reverse(in.Skills)
	_, _, b := build(t, in)
	if !bytes.Equal(a, b) {
		t.Fatalf("skill order changed the payload:\n%s\n%s", a, b)
	}
}

func TestGolden(t *testing.T) {
	_, _, payload := build(t, kitchen())
	checkGolden(t, payload, "kitchen.json")
}

// checkGolden compares payload, indented, with testdata/name; -update
// rewrites the file.
func checkGolden(t *testing.T, payload []byte, name string) {
	t.Helper()
	var got bytes.Buffer
	if err := json.Indent(&got, payload, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("payload differs from %s (run with -update if intended):\n%s", path, diffLines(string(want), got.String()))
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkComponents checks that got holds exactly the components of want,
// each with at least want's fields and values.
func checkComponents(t *testing.T, got map[string]map[string]any, want map[string]map[string]any) {
	t.Helper()
	for key, fields := range want {
		c, ok := got[key]
		if !ok {
			t.Errorf("no component %q (have %v)", key, keys(got))
			continue
		}
		for f, v := range fields {
			if !equalJSON(c[f], v) {
				t.Errorf("%s.%s = %#v, want %#v", key, f, c[f], v)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("components %v, want exactly %v", keys(got), keys(want))
	}
}

// Every key that Home Assistant can abbreviate is abbreviated (the config is
// retained per device: its size is memory on the broker and every
// subscriber), and Expand gives back what Home Assistant reads.
func TestAbbreviatedAndExpandable(t *testing.T) {
	full := func(abbr map[string]string) map[string]bool {
		m := map[string]bool{}
		for _, f := range abbr {
			m[f] = true
		}
		return m
	}
	noFull := func(what string, m map[string]any, abbr map[string]string) {
		for k := range m {
			if full(abbr)[k] && abbr[k] == "" {
				t.Errorf("%s: key %q is written in full; Home Assistant has an abbreviation for it", what, k)
			}
		}
	}
	in := kitchen()
	in.Withdrawn = map[string]string{"update_gone": "update"}
	_, payload, err := hadiscovery.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	_, gwPayload, err := hadiscovery.BuildGateway(hadiscovery.GatewayInput{ChorusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{payload, gwPayload} {
		var raw map[string]any
		if err := json.Unmarshal(p, &raw); err != nil {
			t.Fatal(err)
		}
		noFull("top level", raw, abbrev)
		noFull("device", raw["dev"].(map[string]any), deviceAbbrev)
		noFull("origin", raw["o"].(map[string]any), originAbbrev)
		for k, c := range raw["cmps"].(map[string]any) {
			noFull("component "+k, c.(map[string]any), abbrev)
		}
		got, err := hadiscovery.Expand(p)
		if err != nil {
			t.Fatal(err)
		}
		d := decode(t, p)
		want := d.top
		want["device"], want["origin"] = d.device, d.origin
		cmps := map[string]any{}
		for k, c := range d.components {
			cmps[k] = c
		}
		want["components"] = cmps
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("Expand:\n%s\nwant (Home Assistant's expansion):\n%s", gb, wb)
		}
	}
	if m, err := hadiscovery.Expand(nil); m != nil || err != nil {
		t.Errorf("Expand(removal) = %v, %v", m, err)
	}
}

// TestReplaceIsBuildWithWithdrawn: Replace gives the topic and bytes Build
// gives with Withdrawn set to the previous live components that are gone,
// and the live components Components gives; a previous component Build
// would refuse is refused.
func TestReplaceIsBuildWithWithdrawn(t *testing.T) {
	old := kitchen()
	old.Skills = append(old.Skills, hadiscovery.Skill{ID: "old.skill", Managed: true})
	prevLive, err := hadiscovery.Components(old)
	if err != nil {
		t.Fatal(err)
	}
	in := kitchen()
	want, err := hadiscovery.Components(in)
	if err != nil {
		t.Fatal(err)
	}
	for name, prev := range map[string]map[string]string{"first config": nil, "unchanged": want, "skill gone": prevLive} {
		withdrawn := map[string]string{}
		for k, p := range prev {
			if _, ok := want[k]; !ok {
				withdrawn[k] = p
			}
		}
		b := in
		b.Withdrawn = withdrawn
		wantTopic, wantPayload, err := hadiscovery.Build(b)
		if err != nil {
			t.Fatal(err)
		}
		topic, payload, live, err := hadiscovery.Replace(in, prev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if topic != wantTopic || !bytes.Equal(payload, wantPayload) {
			t.Errorf("%s: Replace = %s %s\nwant %s %s", name, topic, payload, wantTopic, wantPayload)
		}
		if !maps.Equal(live, want) {
			t.Errorf("%s: live %v, want %v", name, live, want)
		}
	}
	if name := "skill gone"; len(prevLive) != len(want)+2 {
		t.Fatalf("%s: the old skill left %d components, want 2", name, len(prevLive)-len(want))
	}
	if _, _, _, err := hadiscovery.Replace(in, map[string]string{"switch_x": "light"}); err == nil {
		t.Error("a previous component of an unknown platform was accepted")
	}
	if _, _, _, err := hadiscovery.Replace(hadiscovery.Input{Device: "bad/id"}, nil); err == nil {
		t.Error("an invalid device id was accepted")
	}
}
