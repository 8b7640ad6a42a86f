package configs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// UpFileName is the file `chorus up` and `chorus gateway` write into the data
// dir so later commands and plain MQTT clients work next to them with no setup
// (ARCHITECTURE.md §6).
const UpFileName = "up.json"

// DefaultDataDir is where `chorus up` keeps its state, relative to the working directory.
const DefaultDataDir = "./chorus-data"

// Up is the content of up.json. It holds secrets: it is written with mode 0600.
type Up struct {
	MQTTURL string `json:"mqtt_url"`
	HTTPURL string `json:"http_url"`
	// AdvertiseMQTTURL and AdvertiseHTTPURL are what other machines are
	// given (a device's credentials): MQTTURL and HTTPURL are for clients on
	// this machine and may name a wildcard or loopback address.
	AdvertiseMQTTURL string     `json:"advertise_mqtt_url,omitempty"`
	AdvertiseHTTPURL string     `json:"advertise_http_url,omitempty"`
	Observer         Credential `json:"observer"` // integration role, read-only (e.g. mosquitto_sub, Home Assistant)
	Operator         Credential `json:"operator"` // operator role, for `chorus bus`
	// Device and Agent are set by `chorus up`: the local device and its agent's credentials.
	Device string            `json:"device,omitempty"`
	Agent  *AgentCredentials `json:"agent,omitempty"`
}

// Credential is an MQTT username and password.
type Credential struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// UpPath returns the path of up.json in dataDir.
func UpPath(dataDir string) string { return filepath.Join(dataDir, UpFileName) }

// WriteUp writes u to path atomically with mode 0600.
func WriteUp(path string, u Up) error {
	b, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// ErrNoUpFile is returned by ReadUp when path does not exist.
var ErrNoUpFile = errors.New("no up.json: start `chorus up` (or `chorus gateway`) first, or pass --mqtt-url and credentials")

// ReadUp reads up.json from path.
func ReadUp(path string) (Up, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Up{}, fmt.Errorf("%s: %w", path, ErrNoUpFile)
	}
	if err != nil {
		return Up{}, fmt.Errorf("read %s: %w", path, err)
	}
	var u Up
	if err := json.Unmarshal(b, &u); err != nil {
		return Up{}, fmt.Errorf("read %s: %w", path, err)
	}
	return u, nil
}
