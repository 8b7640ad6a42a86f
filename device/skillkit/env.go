package skillkit

import (
	"fmt"
	"github.com/chorus-edge/chorus/device/process"
	"strings"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// The environment a skill process receives from its agent (SKILL_MANAGER §2).
// device/process sets them and owns the names; they are repeated here so skill
// authors find them in the kit they import.
const (
	EnvMQTTURL   = process.EnvMQTTURL
	EnvUsername  = process.EnvUsername
	EnvPassword  = process.EnvPassword
	EnvDevice    = process.EnvDevice
	EnvSkillID   = process.EnvSkillID
	EnvBusPrefix = process.EnvBusPrefix
	EnvSettings  = process.EnvSettings
	EnvBin       = process.EnvBin
)

// Env is a skill's view of its environment.
type Env struct {
	MQTTURL   string // the broker
	Username  string // the skill's MQTT credentials, minted by the agent
	Password  string
	Device    string // the device id
	SkillID   string // the skill id
	BusPrefix string // chorus/v1/<device>/bus/
	Settings  string // path of settings.json; "" = none
	Bin       string // the agent's executable; "" when not given
}

// FromEnv reads Env through getenv. Every variable but CHORUS_SETTINGS and
// CHORUS_BIN is required; the error names all that are missing at once. The
// ids must be valid, and CHORUS_BUS_PREFIX must be the device's bus prefix.
func FromEnv(getenv func(string) string) (Env, error) {
	e := Env{
		MQTTURL: getenv(EnvMQTTURL), Username: getenv(EnvUsername), Password: getenv(EnvPassword),
		Device: getenv(EnvDevice), SkillID: getenv(EnvSkillID), BusPrefix: getenv(EnvBusPrefix),
		Settings: getenv(EnvSettings), Bin: getenv(EnvBin),
	}
	if err := e.missing(); err != nil {
		return Env{}, err
	}
	if err := e.validate(); err != nil {
		return Env{}, err
	}
	return e, nil
}

func (e Env) missing() error {
	var missing []string
	for _, v := range []struct{ name, val string }{
		{EnvMQTTURL, e.MQTTURL}, {EnvUsername, e.Username}, {EnvPassword, e.Password},
		{EnvDevice, e.Device}, {EnvSkillID, e.SkillID}, {EnvBusPrefix, e.BusPrefix},
	} {
		if v.val == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("skill environment: missing %s (a skill runs under chorus agent, which sets them)",
			strings.Join(missing, ", "))
	}
	return nil
}

func (e Env) validate() error {
	if err := topic.ValidSkillID(e.SkillID); err != nil {
		return fmt.Errorf("skill environment: %s: %w", EnvSkillID, err)
	}
	prefix, err := topic.BusPrefix(e.Device)
	if err != nil {
		return fmt.Errorf("skill environment: %s: %w", EnvDevice, err)
	}
	if e.BusPrefix != prefix {
		return fmt.Errorf("skill environment: %s %q is not the bus of device %s (want %q)",
			EnvBusPrefix, e.BusPrefix, e.Device, prefix)
	}
	return nil
}
