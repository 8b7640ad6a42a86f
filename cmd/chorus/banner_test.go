//go:build !chorus_agent

package main

import (
	"testing"

	"github.com/chorus-edge/chorus/configs"
)

func TestObserverSub(t *testing.T) {
	obs := configs.Credential{Username: "integration:observer"}
	tests := []struct {
		name, url, dir, want string
	}{
		{"loopback", "mqtt://127.0.0.1:18830", "./chorus-data",
			`mosquitto_sub -V 5 -h 127.0.0.1 -p 18830 -u integration:observer -P "$(jq -r .observer.password chorus-data/up.json)" -t 'chorus/v1/#' -v`},
		{"wildcard is reached on loopback", "mqtt://[::]:1883", "/var/lib/chorus",
			`mosquitto_sub -V 5 -h 127.0.0.1 -p 1883 -u integration:observer -P "$(jq -r .observer.password /var/lib/chorus/up.json)" -t 'chorus/v1/#' -v`},
		{"named host, TLS, a path with a space", "mqtts://gw.lan:8883", "/srv/my data",
			`mosquitto_sub -V 5 -h gw.lan -p 8883 --cafile <the broker's CA certificate> -u integration:observer -P "$(jq -r .observer.password '/srv/my data/up.json')" -t 'chorus/v1/#' -v`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := observerSub(configs.Up{MQTTURL: tc.url, Observer: obs}, tc.dir); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
