package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/fleet/localauth"
)

// Pending enrolments on the overview: listed with accept and reject forms
// that need the CSRF token, and act through the controller.
func TestPendingEnrolments(t *testing.T) {
	g := gatewaydtest.Start(t, gatewayd.Config{})
	ctx := context.Background()
	ctl := g.Fleet()
	tok, err := ctl.CreateJoinToken(ctx, "operator", []string{"hall"}, 2, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	join := func(device string) *fleet.PendingDevice {
		t.Helper()
		res, err := ctl.Join(ctx, "198.18.0.7", tok.Token.ID, tok.Secret, device)
		if err != nil || res.Pending == nil {
			t.Fatalf("join %s: %+v, %v", device, res, err)
		}
		return res.Pending
	}
	pa, pb := join("pi-accept"), join("pi-reject")

	base := g.Up().HTTPURL
	token, err := os.ReadFile(filepath.Join(g.DataDir(), localauth.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	resp, err := c.PostForm(base+"/login", url.Values{"token": {strings.TrimSpace(string(token))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	resp, err = c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"pi-accept", "pi-reject", "198.18.0.7", "/enrolments/" + pa.ID + "/accept", "/enrolments/" + pb.ID + "/reject", "2</strong> pending enrolments"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("overview lacks %q", want)
		}
	}

	// Without the CSRF token: refused, nothing changed.
	if resp, err = c.PostForm(base+"/enrolments/"+pa.ID+"/accept", url.Values{}); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("accept without CSRF: %d, want 403", resp.StatusCode)
	}
	if _, err := ctl.GetDevice(ctx, "pi-accept"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("device after a refused accept: %v", err)
	}

	csrf := csrfOf(t, c, base+"/")
	post := func(path string) int {
		t.Helper()
		resp, err := c.PostForm(base+path, url.Values{"csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/enrolments/" + pa.ID + "/accept"); code != http.StatusSeeOther {
		t.Fatalf("accept: %d", code)
	}
	if d, err := ctl.GetDevice(ctx, "pi-accept"); err != nil || !d.HasTag("hall") {
		t.Fatalf("accepted device: %+v, %v", d, err)
	}
	if code := post("/enrolments/" + pb.ID + "/reject"); code != http.StatusSeeOther {
		t.Fatalf("reject: %d", code)
	}
	if _, err := ctl.GetDevice(ctx, "pi-reject"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Errorf("rejected device in the fleet: %v", err)
	}
	if code := post("/enrolments/p-unknown/accept"); code != http.StatusNotFound {
		t.Errorf("accept of an unknown enrolment: %d, want 404", code)
	}
	ps, _ := ctl.ListPending(ctx)
	if len(ps) != 1 || ps[0].ID != pa.ID || !ps[0].Accepted {
		t.Errorf("pending after the decisions: %+v (the accepted one waits for its agent)", ps)
	}
	resp, _ = c.Get(base + "/")
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "accepted, waiting for the device") || strings.Contains(string(page), "pi-reject") {
		t.Errorf("overview after the decisions does not show the accepted one waiting, or still shows the rejected one")
	}
}
