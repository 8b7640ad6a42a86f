// Package localauth keeps the credentials a single gateway issues for itself
// before any fleet registry exists: an observer (integration role), an
// operator, and with `chorus up` the local device's agent. They are created
// once and persisted in the data dir (mode 0600), so external clients such as
// Home Assistant keep working across restarts.
package localauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// FileName is the file in the data dir holding the local credentials.
const FileName = "local-credentials.json"

// Local is the set of locally issued credentials.
type Local struct {
	Observer configs.Credential        `json:"observer"`
	Operator configs.Credential        `json:"operator"`
	Device   *configs.AgentCredentials `json:"device,omitempty"`
}

// LoadOrCreate reads the local credentials from dataDir, creating what is
// missing. device, when not empty, asks for a local device and its agent's
// credentials (with `chorus up`); a stored device of another id is replaced.
func LoadOrCreate(dataDir, device string) (Local, error) {
	path := filepath.Join(dataDir, FileName)
	var l Local
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return l, fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(b, &l); err != nil {
			return l, fmt.Errorf("read %s: %w", path, err)
		}
	}
	changed, err := l.fill(device)
	if err != nil {
		return l, err
	}
	if changed {
		if err := write(path, l); err != nil {
			return l, err
		}
	}
	return l, nil
}

func (l *Local) fill(device string) (changed bool, err error) {
	if l.Observer.Password == "" {
		if l.Observer, err = credential("integration:observer"); err != nil {
			return false, err
		}
		changed = true
	}
	if l.Operator.Password == "" {
		if l.Operator, err = credential("operator:local"); err != nil {
			return false, err
		}
		changed = true
	}
	if device != "" && (l.Device == nil || l.Device.Device != device) {
		if err := topic.ValidDeviceID(device); err != nil {
			return false, fmt.Errorf("local device: %w", err)
		}
		c, err := credential(device)
		if err != nil {
			return false, err
		}
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return false, fmt.Errorf("generate device key: %w", err)
		}
		l.Device = &configs.AgentCredentials{Device: device, Username: device, Password: c.Password,
			SkillKey: configs.EncodeSkillKey(key), KeyVersion: 1}
		changed = true
	}
	return changed, nil
}

func credential(username string) (configs.Credential, error) {
	s, err := broker.NewSecret()
	return configs.Credential{Username: username, Password: s}, err
}

func write(path string, l Local) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return configs.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// Accounts returns the broker accounts for the local credentials.
func (l Local) Accounts() ([]broker.Account, error) {
	accts := []broker.Account{
		broker.ObserverAccount(nameOf(l.Observer.Username), broker.HashSecret(l.Observer.Password)),
		broker.OperatorAccount(nameOf(l.Operator.Username), broker.HashSecret(l.Operator.Password)),
	}
	if d := l.Device; d != nil {
		key, err := d.PrivateKey()
		if err != nil {
			return nil, fmt.Errorf("local device %s: %w", d.Device, err)
		}
		accts = append(accts, broker.DeviceAccount(d.Device, broker.HashSecret(d.Password), key.Public().(ed25519.PublicKey), d.KeyVersion))
	}
	return accts, nil
}

// nameOf strips the role prefix of a username ("operator:local" -> "local").
func nameOf(username string) string {
	for i := range username {
		if username[i] == ':' {
			return username[i+1:]
		}
	}
	return username
}
