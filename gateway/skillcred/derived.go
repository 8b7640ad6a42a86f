package skillcred

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// The derived form is the second skill credential form, for external brokers
// that check static passwords (docs/security.md, "Skill credential forms").
// Its password is "d<version>.<base64url HMAC-SHA256>", keyed with the raw
// SHA-256 of the device secret over the same string Mint signs. The controller
// stores exactly that digest ("sha256:<hex>", broker.HashSecret), so it can
// compute every skill's password and export it (a Mosquitto dynamic-security
// file); the agent computes it from the plain secret it holds. The price is
// that whoever holds the stored digest can mint skill credentials, where the
// signed form needs the device's private key. It cannot log in as the device:
// that takes the secret itself.

// DerivedPrefix starts every derived-form password; signed passwords start
// with "v", so the forms cannot be confused.
const DerivedPrefix = "d"

// DeriveKey returns the HMAC key of the derived form for a device secret:
// the raw SHA-256 of the secret.
func DeriveKey(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// KeyFromHash returns the HMAC key from the stored form of the device secret,
// "sha256:<hex>" (broker.HashSecret).
func KeyFromHash(secretHash string) ([]byte, error) {
	h, ok := strings.CutPrefix(secretHash, "sha256:")
	if !ok {
		return nil, fmt.Errorf("%w: secret hash is not sha256:<hex>", ErrInvalid)
	}
	key, err := hex.DecodeString(h)
	if err != nil || len(key) != sha256.Size {
		return nil, fmt.Errorf("%w: malformed secret hash", ErrInvalid)
	}
	return key, nil
}

// MintDerived returns the derived-form password for skill on device, with
// key from DeriveKey or KeyFromHash.
func MintDerived(key []byte, keyVersion int, device, skill string) string {
	return DerivedPrefix + strconv.Itoa(keyVersion) + "." + base64.RawURLEncoding.EncodeToString(derivedMAC(key, device, skill, keyVersion))
}

// VerifyDerived checks a derived-form password against the stored device
// secret hash. A password of another key version, device or skill fails.
func VerifyDerived(secretHash string, keyVersion int, device, skill, password string) error {
	key, err := KeyFromHash(secretHash)
	if err != nil {
		return err
	}
	ver, mac, ok := strings.Cut(password, ".")
	if !ok || ver != DerivedPrefix+strconv.Itoa(keyVersion) {
		return fmt.Errorf("%w: key version mismatch", ErrInvalid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || len(raw) != sha256.Size {
		return fmt.Errorf("%w: malformed MAC", ErrInvalid)
	}
	if !hmac.Equal(raw, derivedMAC(key, device, skill, keyVersion)) {
		return fmt.Errorf("%w: MAC does not verify", ErrInvalid)
	}
	return nil
}

func derivedMAC(key []byte, device, skill string, keyVersion int) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(signed(device, skill, keyVersion))
	return m.Sum(nil)
}
