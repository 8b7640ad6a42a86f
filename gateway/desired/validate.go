package desired

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chorus-edge/chorus/gateway/topic"
)

func validID(id string) error { return topic.ValidSkillID(id) }

// validate checks one skill; the error starts with the field name.
func (s Skill) validate() error {
	if err := validVersion(s.Version); err != nil {
		return fmt.Errorf("version: %v", err)
	}
	if !ValidSHA256(s.SHA256) {
		return fmt.Errorf("sha256: %q is not 64 lowercase hex digits", s.SHA256)
	}
	if s.Size <= 0 || s.Size > MaxArtifactSize {
		return fmt.Errorf("size: %d is outside 1..%d", s.Size, MaxArtifactSize)
	}
	if err := validURL(s.URL, s.SHA256); err != nil {
		return fmt.Errorf("url: %v", err)
	}
	return nil
}

// ValidSHA256 reports whether s is a sha256 digest as Chorus writes it: 64
// lowercase hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func validVersion(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty")
	case len(v) > MaxVersionLen:
		return fmt.Errorf("longer than %d bytes", MaxVersionLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("not UTF-8")
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("%q holds a space or control character", v)
	}
	return nil
}

// validURL accepts the gateway-relative /v1/artifacts/<sha256> of this very
// artifact, or an absolute http(s) URL without credentials (a mirror; the
// sha256 pins the content wherever it comes from).
func validURL(raw, sha string) error {
	switch {
	case raw == "":
		return fmt.Errorf("empty")
	case len(raw) > MaxURLLen:
		return fmt.Errorf("longer than %d bytes", MaxURLLen)
	case strings.HasPrefix(raw, "/"):
		if raw != ArtifactURL(sha) {
			return fmt.Errorf("relative url %q is not %s", raw, ArtifactURL(sha))
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q does not parse", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is neither %s<sha256> nor an http(s) URL", raw, ArtifactPrefix)
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials", raw)
	}
	return nil
}
