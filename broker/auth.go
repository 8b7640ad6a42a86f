package broker

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// Role is what an account may do on the broker (ARCHITECTURE.md §6).
type Role string

const (
	RoleDevice      Role = "device"      // one satellite's agent
	RoleSkill       Role = "skill"       // a skill process, credentials minted by its agent
	RoleIntegration Role = "integration" // an observer such as Home Assistant
	RoleOperator    Role = "operator"    // a person using `chorus bus`
)

// Account is one row of the in-memory auth table. Filters are MQTT topic filters;
// a publish or subscription is allowed only when a filter covers it (deny by default).
type Account struct {
	Username   string
	Role       Role
	Device     string // the device id, for RoleDevice and RoleSkill
	Skill      string // the skill id, for RoleSkill
	SecretHash string // HashSecret of the password; empty for skills (they verify by signature)

	Publish   []string // topics the account may publish to
	Retain    []string // topics on which the account may publish retained; a subset of Publish
	Subscribe []string // topics the account may subscribe to and receive

	// DenyTypes are bus message types the account may not publish even
	// where Publish covers the topic; "prefix*" matches by prefix.
	// AllowTypes are exceptions to DenyTypes (a skill grant), in the same form.
	DenyTypes  []string
	AllowTypes []string

	// SkillGrants maps a skill id to the AllowTypes of that skill's account
	// (device accounts only; docs/security.md, "Skill grants").
	SkillGrants map[string][]string

	// SkillKey verifies the credentials the device's agent mints for its skills
	// (device accounts only); KeyVersion is the version those credentials must name.
	SkillKey   ed25519.PublicKey
	KeyVersion int
}

// ErrBadCredentials is returned by Authenticate for an unknown user or a wrong secret.
var ErrBadCredentials = errors.New("bad username or password")

// NewSecret returns a random 256-bit secret in base64url, for a device, an
// integration or an operator. Such a secret needs no slow hash: guessing it is
// infeasible, so a single SHA-256 keeps a reconnect storm cheap (ARCHITECTURE.md §6).
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSecret returns the stored form of a high-entropy secret: "sha256:<hex>".
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func secretMatches(hash, secret string) bool {
	want := HashSecret(secret)
	return len(hash) == len(want) && subtle.ConstantTimeCompare([]byte(hash), []byte(want)) == 1
}

// Table is an immutable snapshot of accounts. The broker swaps whole tables
// atomically; nothing on the packet path reads a database.
type Table struct {
	accounts map[string]*Account
	skills   sync.Map // skill username -> *Account, derived on first use
}

// NewTable builds a table, refusing duplicate or malformed accounts.
func NewTable(accounts ...Account) (*Table, error) {
	t := &Table{accounts: make(map[string]*Account, len(accounts))}
	for i := range accounts {
		a := accounts[i]
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("auth table: account %q: %w", a.Username, err)
		}
		if _, dup := t.accounts[a.Username]; dup {
			return nil, fmt.Errorf("auth table: duplicate username %q", a.Username)
		}
		t.accounts[a.Username] = &a
	}
	return t, nil
}

func (a *Account) validate() error {
	switch {
	case a.Username == "":
		return errors.New("empty username")
	case a.Role == RoleSkill:
		return errors.New("skill accounts are derived from their device, not stored")
	case a.Role != RoleDevice && a.Role != RoleIntegration && a.Role != RoleOperator:
		return fmt.Errorf("unknown role %q", a.Role)
	case a.Role == RoleDevice && (a.Device == "" || a.Username != a.Device):
		return errors.New("a device account's username must be its device id")
	case a.Role == RoleDevice && strings.Contains(a.Device, ":"):
		return errors.New("device id contains ':'")
	case a.Role != RoleDevice && !strings.Contains(a.Username, ":"):
		return errors.New("non-device usernames take the form <role>:<name>")
	case !strings.HasPrefix(a.SecretHash, "sha256:"):
		return errors.New("secret hash must be sha256:<hex>")
	}
	for _, f := range append(append(append([]string(nil), a.Publish...), a.Subscribe...), a.Retain...) {
		if err := validFilter(f); err != nil {
			return err
		}
	}
	return nil
}

// Len reports the number of stored accounts.
func (t *Table) Len() int { return len(t.accounts) }

// Authenticate returns the account that username and password prove, or
// ErrBadCredentials. Devices, integrations and operators present their secret;
// skills present a credential signed with their device's key.
func (t *Table) Authenticate(username string, password []byte) (*Account, error) {
	if dev, skill, ok := skillcred.ParseUsername(username); ok {
		return t.authenticateSkill(username, dev, skill, string(password))
	}
	a, ok := t.accounts[username]
	if !ok || !secretMatches(a.SecretHash, string(password)) {
		return nil, ErrBadCredentials
	}
	return a, nil
}

func (t *Table) authenticateSkill(username, device, skill, password string) (*Account, error) {
	dev, ok := t.accounts[device]
	if !ok || dev.Role != RoleDevice {
		return nil, ErrBadCredentials
	}
	// Only the signed form (docs/security.md, "Skill credential forms"). The
	// derived form is keyed with the stored hash of the device secret, which
	// this table holds: accepting it would turn a leaked registry or backup
	// into a login as any skill. It exists for Mosquitto's static passwords,
	// where the broker checks it, never this table.
	if err := skillcred.Verify(dev.SkillKey, dev.KeyVersion, device, skill, password); err != nil {
		return nil, ErrBadCredentials
	}
	return t.skillAccount(username, dev, skill), nil
}

// Lookup returns the account a connected client authenticated as, by username,
// without checking a secret. Skill accounts are derived from their device's row.
func (t *Table) Lookup(username string) (*Account, bool) {
	if dev, skill, ok := skillcred.ParseUsername(username); ok {
		d, ok := t.accounts[dev]
		if !ok || d.Role != RoleDevice {
			return nil, false
		}
		return t.skillAccount(username, d, skill), true
	}
	a, ok := t.accounts[username]
	return a, ok
}

func (t *Table) skillAccount(username string, dev *Account, skill string) *Account {
	if a, ok := t.skills.Load(username); ok {
		return a.(*Account)
	}
	a := SkillAccount(dev.Device, skill, dev.SkillGrants[skill]...)
	v, _ := t.skills.LoadOrStore(username, &a)
	return v.(*Account)
}
