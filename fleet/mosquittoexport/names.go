package mosquittoexport

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// The names Chorus gives its dynamic-security objects, shared by the file
// export and the live sync (fleet/mosquittosync), so either can take over
// from the other: a client per account, a role "chorus:<username>" holding
// its ACLs and a group "chorus-<kind>s" per account kind.

// RoleName is the role holding username's row of the matrix.
func RoleName(username string) string { return "chorus:" + username }

// GroupName is the group of the accounts of kind (a broker.Role, or
// "controller").
func GroupName(kind string) string { return "chorus-" + kind + "s" }

// textPrefix starts the textname of every client Chorus writes.
const textPrefix = "chorus "

// fpTag introduces the secret fingerprint in a client's textname.
const fpTag = " fp:"

// ClientTextName is the textname of a client of kind whose password was made
// from the secret with fingerprint fp ("" for none): "chorus device
// fp:0123abcd…". Mosquitto never reveals a password hash over $CONTROL, so
// the textname is how the live sync tells a current password from one made
// before a rotation.
func ClientTextName(kind, fp string) string {
	if fp == "" {
		return textPrefix + kind
	}
	return textPrefix + kind + fpTag + fp
}

// ParseClientTextName reports whether textname is one ClientTextName wrote
// (the client is Chorus's) and the fingerprint it carries ("" when none:
// an export older than the fingerprints).
func ParseClientTextName(textname string) (fp string, chorus bool) {
	rest, ok := strings.CutPrefix(textname, textPrefix)
	if !ok || rest == "" {
		return "", false
	}
	_, fp, _ = strings.Cut(rest, fpTag)
	return fp, true
}

// Fingerprint names, without revealing anything that proves it, the secret
// an account's Mosquitto password is made from: a truncated SHA-256 over the
// stored hash of the secret (and the key version, for derived skill
// passwords). The stored hash itself must not appear: it keys the derived
// skill credentials (docs/security.md, "Skill credential forms").
func Fingerprint(secretHash string, keyVersion int) string {
	sum := sha256.Sum256([]byte("chorus-mosquitto-fingerprint\x00" + secretHash + "\x00" + strconv.Itoa(keyVersion)))
	return hex.EncodeToString(sum[:8])
}

// AccountFingerprint is Fingerprint for a: its own secret, or for a skill
// its device's (dev) secret and key version.
func AccountFingerprint(a broker.Account, dev *broker.Account) string {
	if a.Role == broker.RoleSkill {
		if dev == nil {
			return ""
		}
		return Fingerprint(dev.SecretHash, dev.KeyVersion)
	}
	return Fingerprint(a.SecretHash, 0)
}

// SkillPassword is the derived-form password of skill on dev, which the
// controller computes from the stored hash of the device secret
// (gateway/skillcred).
func SkillPassword(dev *broker.Account, skill string) (string, error) {
	key, err := skillcred.KeyFromHash(dev.SecretHash)
	if err != nil {
		return "", err
	}
	return skillcred.MintDerived(key, dev.KeyVersion, dev.Device, skill), nil
}
