// Package skillcred mints and verifies the MQTT credentials of a skill process.
//
// A skill connects with credentials its agent derives from the device's signing
// key (ARCHITECTURE.md §6): the username names the device and the skill, the
// password is an Ed25519 signature over both plus the key version. The broker
// holds only the device's public key, so it verifies a skill in memory and never
// stores a skill secret; rotating the device key (a new key version) revokes every
// credential minted with the old one. Credentials carry no expiry, so a Pi that
// boots without a clock still connects (SKILL_MANAGER.md §2).
//
// That signed form is the default. derived.go adds a second form, an HMAC
// keyed with the hash of the device secret that the controller can reproduce,
// for external brokers that check static passwords (docs/security.md, "Skill
// credential forms").
package skillcred

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// prefix marks a skill username; device ids never contain ':' so the forms
// "<device>" and "skill:<device>:<skill>" cannot collide.
const prefix = "skill:"

// ErrInvalid is returned for any credential that does not verify.
var ErrInvalid = errors.New("invalid skill credential")

// Username returns the MQTT username of skill on device.
func Username(device, skill string) string {
	return prefix + device + ":" + skill
}

// ParseUsername splits a skill username; ok is false for any other username.
func ParseUsername(u string) (device, skill string, ok bool) {
	rest, found := strings.CutPrefix(u, prefix)
	if !found {
		return "", "", false
	}
	device, skill, found = strings.Cut(rest, ":")
	if !found || device == "" || skill == "" || strings.Contains(skill, ":") {
		return "", "", false
	}
	return device, skill, true
}

// signed is the byte string a credential signs. NUL separators keep the fields
// unambiguous whatever the ids contain.
func signed(device, skill string, keyVersion int) []byte {
	return []byte("chorus-skill-credential/v1\x00" + device + "\x00" + skill + "\x00" + strconv.Itoa(keyVersion))
}

// Mint returns the password for skill on device, signed with the device key of
// the given version. The form is "v<version>.<base64url signature>".
func Mint(key ed25519.PrivateKey, keyVersion int, device, skill string) string {
	sig := ed25519.Sign(key, signed(device, skill, keyVersion))
	return "v" + strconv.Itoa(keyVersion) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Verify checks password against the device's public key of keyVersion. A
// password minted under another key version fails, which is how rotation revokes.
func Verify(pub ed25519.PublicKey, keyVersion int, device, skill, password string) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: device %s has no skill key", ErrInvalid, device)
	}
	ver, sig, ok := strings.Cut(password, ".")
	if !ok || ver != "v"+strconv.Itoa(keyVersion) {
		return fmt.Errorf("%w: key version mismatch", ErrInvalid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return fmt.Errorf("%w: malformed signature", ErrInvalid)
	}
	if !ed25519.Verify(pub, signed(device, skill, keyVersion), raw) {
		return fmt.Errorf("%w: signature does not verify", ErrInvalid)
	}
	return nil
}
