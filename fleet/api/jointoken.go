package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// JoinTokenPrefix starts every join token's text; the rest is base64url
// (no padding) of the JSON of JoinToken, so the whole token is one word a
// terminal selects with a double click.
const JoinTokenPrefix = "chorusjoin1_"

// MaxJoinTokenText caps a join token's text (what ParseJoinToken reads).
const MaxJoinTokenText = 4096

// JoinToken is what `chorus fleet token create` prints and `chorus agent
// join` reads: where the gateway is, which token, its secret and, when the
// gateway serves TLS, the SHA-256 of the certificate the agent must find in
// the gateway's chain before it sends anything (docs/security.md).
type JoinToken struct {
	URL    string `json:"url"`          // the gateway's HTTP base URL
	ID     string `json:"id"`           // the token's id (token list, revoke)
	Secret string `json:"secret"`       // shown only in the token
	CAPin  string `json:"ca,omitempty"` // lowercase hex SHA-256 of a DER certificate
}

// String is the token's text.
func (t JoinToken) String() string {
	b, _ := json.Marshal(t)
	return JoinTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseJoinToken reads a token's text (surrounding blanks ignored) and
// checks every field; the error says what is wrong and how to get a good one.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	const fix = ": copy the whole token printed by `chorus fleet token create`"
	if len(s) > MaxJoinTokenText {
		return JoinToken{}, fmt.Errorf("join token: longer than %d characters%s", MaxJoinTokenText, fix)
	}
	body, ok := strings.CutPrefix(s, JoinTokenPrefix)
	if !ok {
		return JoinToken{}, fmt.Errorf("join token: does not start with %q%s", JoinTokenPrefix, fix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token: damaged (not base64url)%s", fix)
	}
	var t JoinToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return JoinToken{}, fmt.Errorf("join token: damaged (not a token object)%s", fix)
	}
	if err := t.validate(); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w%s", err, fix)
	}
	return t, nil
}

// LocalOnly reports whether the token's URL names a loopback or wildcard
// address, which another machine cannot use to reach the gateway.
func (t JoinToken) LocalOnly() bool {
	u, err := url.Parse(t.URL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func (t JoinToken) validate() error {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("url %q: want the gateway's http:// or https:// base URL", t.URL)
	}
	if err := topic.ValidID(t.ID); err != nil {
		return fmt.Errorf("token id: %v", err)
	}
	if t.Secret == "" || len(t.Secret) > 128 {
		return fmt.Errorf("secret: want 1 to 128 characters")
	}
	if t.CAPin == "" {
		return nil
	}
	if u.Scheme != "https" {
		return fmt.Errorf("a CA pin is only meaningful with an https:// url (got %s)", t.URL)
	}
	if len(t.CAPin) != 64 || strings.Trim(t.CAPin, "0123456789abcdef") != "" {
		return fmt.Errorf("ca pin %q: want 64 lowercase hex digits (a SHA-256)", t.CAPin)
	}
	return nil
}
