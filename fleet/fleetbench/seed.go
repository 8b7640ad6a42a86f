package fleetbench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
)

// DeviceCreator is the registry call Seed needs; *sqlite.DB satisfies it.
type DeviceCreator interface {
	CreateDevice(ctx context.Context, d *fleet.Device) error
}

// Seed registers devices directly in a store that no controller runs on
// yet, with credentials made exactly as the controller's AddDevice makes
// them (a random 256-bit secret stored as SHA-256, a fresh Ed25519 skill
// key); the controller's start builds the broker's auth table from them.
// Enrolling through the API instead rebuilds the whole table per device,
// which `chorus bench fleet` times separately on a sample.
func Seed(ctx context.Context, st DeviceCreator, ids []string, tags []string) ([]Credential, error) {
	out := make([]Credential, 0, len(ids))
	for _, id := range ids {
		secret, err := broker.NewSecret()
		if err != nil {
			return nil, err
		}
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		d := &fleet.Device{ID: id, Tags: tags, SecretHash: broker.HashSecret(secret), SkillKey: pub}
		if err := st.CreateDevice(ctx, d); err != nil {
			return nil, fmt.Errorf("seed device %s: %w", id, err)
		}
		out = append(out, Credential{Device: id, Password: secret})
	}
	return out, nil
}
