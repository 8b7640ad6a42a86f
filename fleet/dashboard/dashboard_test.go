package dashboard_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/fleet/localauth"
)

// noRedirect is a client that shows redirects instead of following them.
func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the CSRF token a signed-in page carries.
func csrfOf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	m := csrfRE.FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no CSRF token on %s (%d)", u, resp.StatusCode)
	}
	return m[1]
}

// Sign-in, the session cookie's attributes, the CSRF check and sign-out,
// on a real gateway over HTTP.
func TestSessionAndCSRF(t *testing.T) {
	g := gatewaydtest.Start(t, gatewayd.Config{})
	ctx := context.Background()
	if _, _, err := g.Fleet().AddDevice(ctx, "operator", "pi-1", []string{"kitchen"}); err != nil {
		t.Fatal(err)
	}
	base := g.Up().HTTPURL
	token, err := os.ReadFile(filepath.Join(g.DataDir(), localauth.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)

	resp, err := c.Get(base + "/devices")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("signed-out page: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, err = c.PostForm(base+"/login", url.Values{"token": {"wrong"}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("wrong token: %d with cookies %v", resp.StatusCode, resp.Cookies())
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader("token="+url.QueryEscape(strings.TrimSpace(string(token)))))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in from another origin: %d, want 403", resp.StatusCode)
	}

	if resp, err = c.PostForm(base+"/login", url.Values{"token": {strings.TrimSpace(string(token))}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign in: %d with cookies %v", resp.StatusCode, cookies)
	}
	if ck := cookies[0]; !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure on plain HTTP", ck)
	}
	if strings.Contains(resp.Header.Get("Location"), strings.TrimSpace(string(token))) {
		t.Fatal("the token is in a URL")
	}

	// A POST without the CSRF token changes nothing.
	if resp, err = c.PostForm(base+"/devices/pi-1/tags", url.Values{"tags": {"hall"}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without CSRF: %d, want 403", resp.StatusCode)
	}
	if d, _ := g.Fleet().GetDevice(ctx, "pi-1"); len(d.Tags) != 1 || d.Tags[0] != "kitchen" {
		t.Fatalf("tags after a refused POST: %v", d.Tags)
	}
	csrf := csrfOf(t, c, base+"/devices/pi-1")
	if resp, err = c.PostForm(base+"/devices/pi-1/tags", url.Values{"tags": {"hall  porch"}, "csrf": {csrf}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST with CSRF: %d, want 303", resp.StatusCode)
	}
	if d, _ := g.Fleet().GetDevice(ctx, "pi-1"); strings.Join(d.Tags, ",") != "hall,porch" {
		t.Fatalf("tags = %v, want hall porch", d.Tags)
	}
	// Bad input is a clear error and changes nothing.
	if resp, err = c.PostForm(base+"/rollouts", url.Values{"csrf": {csrf}, "skill": {"nothing.here"}, "action": {"install"}, "target": {"all"}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("rollout of an unknown skill: %d, want 404", resp.StatusCode)
	}

	// Rotate shows the new credentials once; remove takes the device away.
	if resp, err = c.PostForm(base+"/devices/pi-1/rotate", url.Values{"csrf": {csrf}}); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "&#34;password&#34;") {
		t.Fatalf("rotate: %d\n%s", resp.StatusCode, body)
	}
	if resp, err = c.PostForm(base+"/devices/pi-1/remove", url.Values{"csrf": {csrf}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := g.Fleet().GetDevice(ctx, "pi-1"); resp.StatusCode != http.StatusSeeOther || err == nil {
		t.Fatalf("remove: %d, device still there: %v", resp.StatusCode, err == nil)
	}

	// Sign out: the session is gone, its CSRF token with it.
	if resp, err = c.PostForm(base+"/logout", url.Values{"csrf": {csrf}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp, err = c.PostForm(base+"/devices/pi-1/tags", url.Values{"tags": {"x"}, "csrf": {csrf}}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST after sign-out: %d, want 401", resp.StatusCode)
	}
}

// The event stream tells a page about a change made elsewhere (here the
// HTTP API's controller call), after the view applied it.
func TestEventsFollowTheController(t *testing.T) {
	g := gatewaydtest.Start(t, gatewayd.Config{})
	base := g.Up().HTTPURL
	c := signedIn(t, base, g.DataDir())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // retry:
	if _, _, err := g.Fleet().AddDevice(context.Background(), "operator", "pi-9", nil); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, "device/pi-9") {
			// The view applied the change before the event: the list has it.
			page, err := c.Get(base + "/devices?q=pi-9")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(page.Body)
			page.Body.Close()
			if !strings.Contains(string(b), `id="dev-pi-9"`) {
				t.Fatalf("the device list after the event lacks pi-9:\n%s", b)
			}
			return
		}
	}
	t.Fatalf("no change event for pi-9: %v", sc.Err())
}
