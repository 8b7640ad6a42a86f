package skillcred

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func TestMintVerify(t *testing.T) {
	pub, priv := newKey(t)
	otherPub, _ := newKey(t)
	pw := Mint(priv, 3, "pi-1", "hello.chorus")
	tests := []struct {
		name                string
		pub                 ed25519.PublicKey
		ver                 int
		device, skill, pass string
		ok                  bool
	}{
		{"valid", pub, 3, "pi-1", "hello.chorus", pw, true},
		{"other skill", pub, 3, "pi-1", "other.skill", pw, false},
		{"other device", pub, 3, "pi-2", "hello.chorus", pw, false},
		{"rotated key version", pub, 4, "pi-1", "hello.chorus", pw, false},
		{"other key", otherPub, 3, "pi-1", "hello.chorus", pw, false},
		{"no key", nil, 3, "pi-1", "hello.chorus", pw, false},
		{"garbage", pub, 3, "pi-1", "hello.chorus", "v3.!!!", false},
		{"no version", pub, 3, "pi-1", "hello.chorus", "abc", false},
		{"empty", pub, 3, "pi-1", "hello.chorus", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.pub, tc.ver, tc.device, tc.skill, tc.pass)
			if tc.ok && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUsername(t *testing.T) {
	dev, sk, ok := ParseUsername(Username("pi-1", "hello.chorus"))
	if !ok || dev != "pi-1" || sk != "hello.chorus" {
		t.Fatalf("round trip = %q %q %v", dev, sk, ok)
	}
	for _, bad := range []string{"pi-1", "skill:", "skill:pi", "skill::x", "skill:pi:", "skill:a:b:c", "integration:x"} {
		if _, _, ok := ParseUsername(bad); ok {
			t.Errorf("ParseUsername(%q) accepted", bad)
		}
	}
}

func TestMintVerifyDerived(t *testing.T) {
	secret := "device-secret"
	stored := "sha256:" + hex.EncodeToString(DeriveKey(secret))
	pw := MintDerived(DeriveKey(secret), 3, "pi-1", "hello.chorus")
	if !strings.HasPrefix(pw, DerivedPrefix) || strings.HasPrefix(Mint(ed25519.NewKeyFromSeed(make([]byte, 32)), 3, "pi-1", "hello.chorus"), DerivedPrefix) {
		t.Fatalf("the prefix does not tell the forms apart: %q", pw)
	}
	fromHash, err := KeyFromHash(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got := MintDerived(fromHash, 3, "pi-1", "hello.chorus"); got != pw {
		t.Fatalf("the controller's password %q differs from the agent's %q", got, pw)
	}
	other := "sha256:" + hex.EncodeToString(DeriveKey("other"))
	tests := []struct {
		name                string
		hash                string
		ver                 int
		device, skill, pass string
		ok                  bool
	}{
		{"valid", stored, 3, "pi-1", "hello.chorus", pw, true},
		{"other skill", stored, 3, "pi-1", "other.skill", pw, false},
		{"other device", stored, 3, "pi-2", "hello.chorus", pw, false},
		{"other key version", stored, 4, "pi-1", "hello.chorus", pw, false},
		{"rotated secret", other, 3, "pi-1", "hello.chorus", pw, false},
		{"malformed hash", "sha256:zz", 3, "pi-1", "hello.chorus", pw, false},
		{"no hash", "", 3, "pi-1", "hello.chorus", pw, false},
		{"signed prefix", stored, 3, "pi-1", "hello.chorus", "v" + pw[1:], false},
		{"garbage", stored, 3, "pi-1", "hello.chorus", "d3.!!!", false},
		{"truncated", stored, 3, "pi-1", "hello.chorus", pw[:len(pw)-2], false},
		{"empty", stored, 3, "pi-1", "hello.chorus", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyDerived(tc.hash, tc.ver, tc.device, tc.skill, tc.pass)
			if tc.ok && err != nil {
				t.Fatalf("VerifyDerived: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Fatalf("VerifyDerived = %v, want ErrInvalid", err)
			}
		})
	}
}
