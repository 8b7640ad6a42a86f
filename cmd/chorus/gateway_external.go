//go:build !chorus_agent

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet/external"
)

// externalFlags are `chorus gateway`'s flags for running on an external MQTT
// 5 broker (docs/security.md, "On an external broker").
type externalFlags struct {
	broker     string // embedded | external
	url        string
	username   string
	password   string
	authSecret string
	// mosquittoDynsec keeps Mosquitto's dynamic-security plugin in step with
	// the registry over $CONTROL (gateway_dynsec.go).
	mosquittoDynsec bool
}

func (f *externalFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.broker, "broker", "embedded", "MQTT broker: embedded (mochi, in-process) or external (--mqtt-url)")
	fl.StringVar(&f.url, "mqtt-url", "", "external broker URL (mqtt://, mqtts://, ws://, wss://); agents get it in their credentials")
	fl.StringVar(&f.username, "mqtt-username", "controller", "the controller's username on the external broker")
	fl.StringVar(&f.password, "mqtt-password", "", "the controller's password on the external broker (or $CHORUS_MQTT_PASSWORD)")
	fl.StringVar(&f.authSecret, "broker-auth-secret", "", "shared secret of the EMQX-shaped HTTP auth endpoints (or $CHORUS_BROKER_AUTH_SECRET; off when empty)")
	fl.BoolVar(&f.mosquittoDynsec, "mosquitto-dynsec", false, "keep Mosquitto's dynamic-security clients, roles and groups in step with the registry over $CONTROL/dynamic-security/v1 (needs --broker external)")
}

func (f *externalFlags) check() error {
	switch f.broker {
	case "embedded":
		if f.url != "" {
			return fmt.Errorf("--mqtt-url needs --broker external; to give devices another address of the embedded broker, use --advertise-mqtt")
		}
		if f.mosquittoDynsec {
			return fmt.Errorf("--mosquitto-dynsec needs --broker external")
		}
		return nil
	case "external":
	default:
		return fmt.Errorf("--broker %q: want embedded or external", f.broker)
	}
	if f.url == "" {
		return fmt.Errorf("--broker external needs --mqtt-url")
	}
	if f.password == "" {
		f.password = os.Getenv("CHORUS_MQTT_PASSWORD")
	}
	if f.authSecret == "" {
		f.authSecret = os.Getenv("CHORUS_BROKER_AUTH_SECRET")
	}
	return nil
}

// config is the external broker's configuration; nil for the embedded one.
func (f *externalFlags) config(a *app) *external.Config {
	if f.broker != "external" {
		return nil
	}
	return &external.Config{URL: f.url, Username: f.username, Password: f.password, AuthSecret: f.authSecret,
		DynSec: f.mosquittoDynsec, Logger: a.log}
}
