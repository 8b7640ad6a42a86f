// Package mosquittoexport renders the fleet's auth table as a Mosquitto 2
// password_file and acl_file (docs/security.md, "On an external broker").
//
// Mosquitto's files can express less than the embedded broker: a password
// file line is "username:hash" split at the first ':', so the usernames of
// integrations, operators and skills (integration:<name>, operator:<name>,
// skill:<device>:<skill>) cannot be written at all, and an ACL line grants a
// topic filter for read or write, nothing about retain, payloads, bus types
// or rates. Render writes what can be expressed and names the rest in
// Files.Skipped. RenderDynSec (dynsec.go) writes the config of Mosquitto's
// dynamic-security plugin instead, which carries every role.
package mosquittoexport

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/broker"
)

// Iterations is the PBKDF2 round count of Hash, Mosquitto 2's own default
// (mosquitto_passwd). The secrets are 256-bit random values, so a slow hash
// adds nothing against guessing and would only slow every CONNECT.
const Iterations = 101

const (
	saltLen = 12 // mosquitto_passwd's salt length
	hashLen = 64 // SHA-512 output
)

// Hash returns password in Mosquitto 2's password-file form,
// "$7$<iterations>$<base64 salt>$<base64 PBKDF2-SHA512>".
func Hash(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("mosquitto hash: %w", err)
	}
	return hashWith(password, salt, Iterations)
}

func hashWith(password string, salt []byte, iter int) (string, error) {
	dk, err := pbkdf2.Key(sha512.New, password, salt, iter, hashLen)
	if err != nil {
		return "", fmt.Errorf("mosquitto hash: %w", err)
	}
	enc := base64.StdEncoding
	return "$7$" + strconv.Itoa(iter) + "$" + enc.EncodeToString(salt) + "$" + enc.EncodeToString(dk), nil
}

// Verify reports whether password matches a Hash result (tests and checks).
func Verify(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "7" {
		return false
	}
	iter, err := strconv.Atoi(parts[2])
	if err != nil || iter <= 0 {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil {
		return false
	}
	got, err := hashWith(password, salt, iter)
	return err == nil && got == hash
}

// Superuser is an account outside the table that gets readwrite on every
// topic: the controller's own connection to the external broker.
type Superuser struct {
	Username string
	Hash     string // Hash of its password
}

// Files is one export.
type Files struct {
	PasswordFile []byte
	ACLFile      []byte
	// Skipped lists, one line each, the accounts left out and why.
	Skipped []string
}

// Render writes the accounts of the table (as the controller builds it)
// whose Mosquitto hash is known. hashes maps a username to its Hash; an
// account without one is skipped (its secret was created before hashes were
// recorded, or elsewhere: rotate it). Superusers come first.
func Render(accounts []broker.Account, hashes map[string]string, supers ...Superuser) (Files, error) {
	var pw, acl bytes.Buffer
	var skipped []string
	acl.WriteString("# Chorus fleet ACL for Mosquitto 2 (chorus fleet export mosquitto).\n" +
		"# Generated: edit the fleet, not this file. Retain, payload, bus-type and rate\n" +
		"# rules of the embedded broker are not expressible here (docs/security.md).\n")
	seen := map[string]bool{}
	for _, s := range supers {
		if err := validUser(s.Username); err != nil {
			return Files{}, err
		}
		if !strings.HasPrefix(s.Hash, "$7$") {
			return Files{}, fmt.Errorf("superuser %q: want a $7$ hash", s.Username)
		}
		seen[s.Username] = true
		fmt.Fprintf(&pw, "%s:%s\n", s.Username, s.Hash)
		fmt.Fprintf(&acl, "\nuser %s\ntopic readwrite #\n", s.Username)
	}
	sorted := slices.Clone(accounts)
	slices.SortFunc(sorted, func(a, b broker.Account) int { return strings.Compare(a.Username, b.Username) })
	for _, a := range sorted {
		switch {
		case seen[a.Username]:
			skipped = append(skipped, a.Username+": shadowed by a superuser of the same name")
			continue
		case validUser(a.Username) != nil:
			skipped = append(skipped, a.Username+": Mosquitto password files cannot hold a username with ':' (use the dynamic-security export, --dynsec)")
			continue
		case hashes[a.Username] == "":
			skipped = append(skipped, a.Username+": no Mosquitto hash recorded for its current secret (rotate it to record one)")
			continue
		}
		seen[a.Username] = true
		fmt.Fprintf(&pw, "%s:%s\n", a.Username, hashes[a.Username])
		fmt.Fprintf(&acl, "\n# %s\nuser %s\n", a.Role, a.Username)
		for _, f := range a.Subscribe {
			fmt.Fprintf(&acl, "topic read %s\n", f)
		}
		for _, f := range a.Publish {
			fmt.Fprintf(&acl, "topic write %s\n", f)
		}
	}
	if len(accounts) > 0 || len(supers) > 0 {
		// Skill processes (skill:<device>:<skill>) cannot be listed: their
		// usernames hold ':' and their passwords are signatures minted on
		// the device. Say so in the file, where an operator looks.
		acl.WriteString("\n# Skill processes (skill:<device>:<skill>) are not expressible in a Mosquitto\n" +
			"# password file; use the dynamic-security export (--dynsec), the EMQX HTTP auth\n" +
			"# endpoints or the embedded broker.\n")
	}
	return Files{PasswordFile: pw.Bytes(), ACLFile: acl.Bytes(), Skipped: skipped}, nil
}

// validUser refuses what a Mosquitto password or ACL file cannot carry.
func validUser(u string) error {
	switch {
	case u == "":
		return fmt.Errorf("mosquitto export: empty username")
	case strings.ContainsAny(u, ": \t\r\n#"):
		return fmt.Errorf("mosquitto export: username %q has a character Mosquitto's files cannot hold", u)
	}
	return nil
}
