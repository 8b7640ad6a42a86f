package configs

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// AgentCredentials are what a device's agent needs to join the fleet: its
// MQTT credentials and the signing key it mints skill credentials with
// (ARCHITECTURE.md §6). `chorus up` writes them into up.json; `chorus fleet
// device add` can write them to a file for `chorus agent --credentials FILE`.
type AgentCredentials struct {
	Device     string `json:"device"`
	MQTTURL    string `json:"mqtt_url,omitempty"`
	ServerURL  string `json:"server_url,omitempty"` // the gateway's HTTP base URL
	Username   string `json:"username"`
	Password   string `json:"password"`
	SkillKey   string `json:"skill_key"` // base64 (std) of the Ed25519 seed
	KeyVersion int    `json:"key_version"`
}

// PrivateKey decodes SkillKey.
func (c AgentCredentials) PrivateKey() (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(c.SkillKey)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("skill_key: want the base64 of a 32-byte Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// EncodeSkillKey returns the SkillKey form of key.
func EncodeSkillKey(key ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(key.Seed())
}

// ReadAgentCredentials reads and checks a credentials file.
func ReadAgentCredentials(path string) (AgentCredentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return AgentCredentials{}, fmt.Errorf("read credentials: %w", err)
	}
	var c AgentCredentials
	if err := json.Unmarshal(b, &c); err != nil {
		return AgentCredentials{}, fmt.Errorf("read credentials %s: %w", path, err)
	}
	if c.Device == "" || c.Username == "" || c.Password == "" {
		return AgentCredentials{}, fmt.Errorf("read credentials %s: device, username and password are required", path)
	}
	if _, err := c.PrivateKey(); err != nil {
		return AgentCredentials{}, fmt.Errorf("read credentials %s: %w", path, err)
	}
	return c, nil
}

// WriteAgentCredentials writes c to path with mode 0600, replacing an
// existing file whole (never leaving it with a wider mode).
func WriteAgentCredentials(path string, c AgentCredentials) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}
