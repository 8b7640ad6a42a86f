package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every JSON file in this folder must load without error or warning.
func TestExampleConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs: %v", err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			_, warnings, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Fatalf("warnings: %v", warnings)
			}
		})
	}
}

func TestMissingFileMeansDefaults(t *testing.T) {
	cfg, w, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || len(w) != 0 {
		t.Fatal(err, w)
	}
	if cfg.Broker.MaxPacketSize != Default().Broker.MaxPacketSize {
		t.Fatal("defaults not applied")
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"not json", `{`, "not valid JSON"},
		{"array", `[]`, "top level must be a JSON object"},
		{"trailing", `{} {}`, "data after"},
		{"wrong type", `{"broker": {"max_packet_size": "big"}}`, "broker.max_packet_size: want int64"},
		{"wrong nested type", `{"skills": {"blacklisted_skills": "x"}}`, "skills.blacklisted_skills"},
		{"out of range", `{"broker": {"max_packet_size": 10}}`, "broker.max_packet_size: 10 is outside"},
		{"bad level", `{"log": {"level": "loud"}}`, "log.level"},
		{"bad listen", `{"http": {"listen": "8080"}}`, "http.listen"},
		{"half tls", `{"broker": {"tls": {"cert_file": "c.pem"}}}`, "broker.tls"},
		{"bad url", `{"connectivity": {"check_urls": ["ftp://x"]}}`, "connectivity.check_urls"},
		{"negative", `{"skills": {"ready_timeout": -1}}`, "skills.ready_timeout"},
		{"route", `{"websocket": {"route": "core"}}`, "websocket.route"},
		{"skill credential form", `{"skills": {"credentials": "plain"}}`, "skills.credentials"},
		{"isolation", `{"skills": {"isolation": "chroot"}}`, "skills.isolation"},
		{"uid range", `{"skills": {"uid_range": "0-999"}}`, "skills.uid_range"},
		{"frames over OVOS's", `{"websocket": {"max_msg_size": 26}}`, "websocket.max_msg_size: 26 is outside 1..25"},
		{"relative launcher", `{"skills": {"ovos": {"launcher": "bin/ovos-skill-launcher"}}}`, "skills.ovos.launcher"},
		{"relative python", `{"skills": {"ovos": {"python": "python3"}}}`, "skills.ovos.python"},
		{"agent's own variable", `{"skills": {"ovos": {"pass_env": ["CHORUS_PASSWORD"]}}}`, "skills.ovos.pass_env"},
		{"runtime's own variable", `{"skills": {"ovos": {"env": {"XDG_CONFIG_HOME": "/tmp"}}}}`, "skills.ovos.env"},
		{"load timeout", `{"skills": {"ovos": {"load_timeout": 0}}}`, "skills.ovos.load_timeout"},
		{"unverifiable ready setting", `{"ready_settings": ["skills", "audio"]}`, "ready_settings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			_, err := Parse([]byte(tc.json), &cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// websocket.max_msg_size takes OVOS's range, up to ovos-config's 25 (MB).
func TestMaxMsgSizeUpToOVOS(t *testing.T) {
	cfg := Default()
	if _, err := Parse([]byte(`{"websocket": {"max_msg_size": 25}}`), &cfg); err != nil || cfg.Websocket.MaxMsgSize != 25 {
		t.Fatalf("max_msg_size 25: %v (%d)", err, cfg.Websocket.MaxMsgSize)
	}
}

// The complete example is the defaults, key for key, but for an installed
// data dir.
func TestExampleIsDefaults(t *testing.T) {
	cfg, _, err := Load("chorus.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = DefaultDataDir
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("chorus.json differs from Default():\n%+v\n%+v", cfg, Default())
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	cfg := Default()
	w, err := Parse([]byte(`{"brokr": {}, "skills": {"blacklisted_skills": ["a"], "colour": 1}}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"unknown key brokr (ignored)", "unknown key skills.colour (ignored)"}
	if strings.Join(w, "|") != strings.Join(want, "|") {
		t.Fatalf("warnings = %q, want %q", w, want)
	}
	if len(cfg.Skills.BlacklistedSkills) != 1 {
		t.Fatal("known key not applied")
	}
}

func TestUpRoundTrip(t *testing.T) {
	p := UpPath(t.TempDir())
	in := Up{MQTTURL: "mqtt://127.0.0.1:1883", Operator: Credential{"operator:local", "s"}}
	if err := WriteUp(p, in); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	out, err := ReadUp(p)
	if err != nil || out.Operator != in.Operator {
		t.Fatal(out, err)
	}
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("chorus.json")
	f.Add(b)
	f.Add([]byte(`{"broker":{"max_packet_size":1e400}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := Default()
		_, _ = Parse(b, &cfg)
	})
}

// agent.keepalive and agent.will_delay take whole seconds in their ranges;
// anything else is refused by key with the range.
func TestAgentConnectionKeys(t *testing.T) {
	for _, c := range []struct {
		keepalive, willDelay Seconds
		want                 string
	}{
		{5, 1, ""},
		{600, 300, ""},
		{4, 5, "agent.keepalive"},
		{30.5, 5, "agent.keepalive"},
		{601, 5, "agent.keepalive"},
		{30, 0, "agent.will_delay"},
		{30, 301, "agent.will_delay"},
	} {
		cfg := Default()
		cfg.Agent = Agent{KeepAlive: c.keepalive, WillDelay: c.willDelay}
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("keepalive %v, will_delay %v: %v", c.keepalive, c.willDelay, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "whole number")):
			t.Errorf("keepalive %v, will_delay %v: %v, want a refusal naming %s and the range", c.keepalive, c.willDelay, err, c.want)
		}
	}
}
