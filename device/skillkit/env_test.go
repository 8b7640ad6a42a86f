package skillkit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/device/skillkit"
)

func fullEnv() map[string]string {
	return map[string]string{
		"CHORUS_MQTT_URL":   "mqtt://127.0.0.1:1883",
		"CHORUS_USERNAME":   "skill:pi-kitchen:hello.chorus",
		"CHORUS_PASSWORD":   "v1.sig",
		"CHORUS_DEVICE":     "pi-kitchen",
		"CHORUS_SKILL_ID":   "hello.chorus",
		"CHORUS_BUS_PREFIX": "chorus/v1/pi-kitchen/bus/",
		"CHORUS_SETTINGS":   "/data/settings/hello.chorus/settings.json",
		"CHORUS_BIN":        "/usr/bin/chorus",
	}
}

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  map[string]string // "" deletes
		wantErr []string          // fragments of the error; none = success
	}{
		{name: "complete"},
		{name: "settings and bin are optional", change: map[string]string{"CHORUS_SETTINGS": "", "CHORUS_BIN": ""}},
		{name: "nothing set", change: map[string]string{
			"CHORUS_MQTT_URL": "", "CHORUS_USERNAME": "", "CHORUS_PASSWORD": "",
			"CHORUS_DEVICE": "", "CHORUS_SKILL_ID": "", "CHORUS_BUS_PREFIX": "",
		}, wantErr: []string{"missing CHORUS_MQTT_URL, CHORUS_USERNAME, CHORUS_PASSWORD, CHORUS_DEVICE, CHORUS_SKILL_ID, CHORUS_BUS_PREFIX", "chorus agent"}},
		{name: "no password", change: map[string]string{"CHORUS_PASSWORD": ""}, wantErr: []string{"missing CHORUS_PASSWORD"}},
		{name: "bad skill id", change: map[string]string{"CHORUS_SKILL_ID": "../x"}, wantErr: []string{"CHORUS_SKILL_ID"}},
		{name: "reserved device", change: map[string]string{"CHORUS_DEVICE": "gateway"}, wantErr: []string{"CHORUS_DEVICE"}},
		{name: "prefix of another device", change: map[string]string{"CHORUS_BUS_PREFIX": "chorus/v1/other/bus/"},
			wantErr: []string{"CHORUS_BUS_PREFIX", "not the bus of device pi-kitchen"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fullEnv()
			for k, v := range tt.change {
				env[k] = v
			}
			got, err := skillkit.FromEnv(getenv(env))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("FromEnv: %v", err)
				}
				want := skillkit.Env{
					MQTTURL: env["CHORUS_MQTT_URL"], Username: env["CHORUS_USERNAME"], Password: env["CHORUS_PASSWORD"],
					Device: "pi-kitchen", SkillID: "hello.chorus", BusPrefix: "chorus/v1/pi-kitchen/bus/",
					Settings: env["CHORUS_SETTINGS"], Bin: env["CHORUS_BIN"],
				}
				if got != want {
					t.Errorf("FromEnv = %+v, want %+v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FromEnv succeeded: %+v", got)
			}
			for _, frag := range tt.wantErr {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q lacks %q", err, frag)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
