package api_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/api"
)

const pin = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestJoinTokenRoundTrip(t *testing.T) {
	for _, tok := range []api.JoinToken{
		{URL: "http://gateway.local:8080", ID: "jt-0a1b2c3d4e", Secret: "s3cret_-x"},
		{URL: "https://192.168.1.10:8443", ID: "jt-ffffffffff", Secret: "abc", CAPin: pin},
	} {
		text := tok.String()
		if !strings.HasPrefix(text, api.JoinTokenPrefix) || strings.ContainsAny(text, " \n=+/") {
			t.Errorf("text %q: want the prefix and one base64url word", text)
		}
		got, err := api.ParseJoinToken("  " + text + "\n")
		if err != nil || got != tok {
			t.Errorf("ParseJoinToken(%q) = %+v, %v; want %+v", text, got, err, tok)
		}
	}
}

func TestParseJoinTokenRefuses(t *testing.T) {
	enc := func(json string) string {
		return api.JoinTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(json))
	}
	for _, c := range []struct{ text, want string }{
		{"", "does not start with"},
		{"K10abc::server:secret", "does not start with"},
		{api.JoinTokenPrefix + "!!!", "not base64url"},
		{enc(`[1,2]`), "not a token object"},
		{enc(`{"url":"ftp://x","id":"jt-1","secret":"s"}`), "url"},
		{enc(`{"url":"http://","id":"jt-1","secret":"s"}`), "url"},
		{enc(`{"url":"http://u:p@gw:1","id":"jt-1","secret":"s"}`), "url"},
		{enc(`{"url":"http://gw:1","id":"bad id","secret":"s"}`), "token id"},
		{enc(`{"url":"http://gw:1","id":"jt-1","secret":""}`), "secret"},
		{enc(`{"url":"http://gw:1","id":"jt-1","secret":"s","ca":"` + pin + `"}`), "https"},
		{enc(`{"url":"https://gw:1","id":"jt-1","secret":"s","ca":"ABC"}`), "64 lowercase hex"},
		{api.JoinTokenPrefix + strings.Repeat("A", api.MaxJoinTokenText), "longer than"},
	} {
		_, err := api.ParseJoinToken(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "chorus fleet token create") {
			t.Errorf("ParseJoinToken(%.60q) = %v; want an error with %q naming the fix", c.text, err, c.want)
		}
	}
}

// FuzzParseJoinToken: any text is parsed or refused without a panic, and
// what is accepted prints back to a text that parses to the same token.
func FuzzParseJoinToken(f *testing.F) {
	f.Add(api.JoinToken{URL: "http://gw:8080", ID: "jt-1", Secret: "s"}.String())
	f.Add(api.JoinToken{URL: "https://gw:8443/", ID: "jt-2", Secret: "x", CAPin: pin}.String())
	f.Add(api.JoinTokenPrefix + "e30")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := api.ParseJoinToken(s)
		if err != nil {
			return
		}
		again, err := api.ParseJoinToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("accepted %q as %+v, but its text parses to %+v, %v", s, tok, again, err)
		}
	})
}

func TestJoinTokenLocalOnly(t *testing.T) {
	for u, want := range map[string]bool{
		"http://[::]:8080": true, "http://0.0.0.0:8080": true, "http://127.0.0.1:8080": true, "http://localhost:8080": true,
		"http://192.168.1.10:8080": false, "https://gateway.local:8443": false, "http://[fd00::1]:8080": false,
	} {
		if got := (api.JoinToken{URL: u}).LocalOnly(); got != want {
			t.Errorf("LocalOnly(%s) = %v, want %v", u, got, want)
		}
	}
}
