package fleet

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// Integration is an observer such as Home Assistant (ARCHITECTURE.md §6):
// it reads the tree and writes skill/+/set, skill/+/update/set,
// homeassistant/status and the bus message types in Allow.
type Integration struct {
	Name       string    `json:"name"`
	SecretHash string    `json:"-"`
	Allow      []string  `json:"allow"` // bus message types it may emit; sorted, unique
	CreatedAt  time.Time `json:"created_at"`
}

// Validate checks the name, the secret hash and every allowed type.
func (i *Integration) Validate() error {
	if err := ValidName("integration", i.Name); err != nil {
		return err
	}
	if err := nonEmpty("integration secret hash", i.SecretHash); err != nil {
		return err
	}
	for _, t := range i.Allow {
		if err := topic.ValidLevel(t); err != nil {
			return Errorf(EINVALID, "integration %s: allow: %v", i.Name, err)
		}
	}
	return nil
}

// Operator is an MQTT credential for `chorus bus` (ARCHITECTURE.md §6).
type Operator struct {
	Name       string    `json:"name"`
	SecretHash string    `json:"-"`
	CreatedAt  time.Time `json:"created_at"`
}

// Validate checks the name and the secret hash.
func (o *Operator) Validate() error {
	if err := ValidName("operator", o.Name); err != nil {
		return err
	}
	return nonEmpty("operator secret hash", o.SecretHash)
}

// CredentialService keeps integration and operator credentials. Their names
// are separate namespaces from device ids and from each other: the broker
// spells their usernames "<role>:<name>".
type CredentialService interface {
	CreateIntegration(ctx context.Context, i *Integration) error
	GetIntegration(ctx context.Context, name string) (*Integration, error)
	ListIntegrations(ctx context.Context) ([]*Integration, error)
	DeleteIntegration(ctx context.Context, name string) error

	CreateOperator(ctx context.Context, o *Operator) error
	GetOperator(ctx context.Context, name string) (*Operator, error)
	ListOperators(ctx context.Context) ([]*Operator, error)
	DeleteOperator(ctx context.Context, name string) error
}

// ExportHash is the Mosquitto password-file hash of one account's secret,
// recorded when the secret was created (fleet/external, fleet/mosquittoexport):
// the plaintext is known only then. An entry counts only while SecretHash is
// still the account's.
type ExportHash struct {
	Username   string
	SecretHash string // the account's SecretHash the entry belongs to
	Mosquitto  string // $7$<iterations>$<salt>$<hash>
}
