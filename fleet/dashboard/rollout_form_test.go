package dashboard_test

import (
	"bytes"
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
	"github.com/chorus-edge/chorus/gateway/artifact"
)

// signIn signs a new client in with the gateway's operator token.
func signIn(t *testing.T, g *gatewayd.Main) *http.Client {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(g.DataDir(), localauth.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	resp, err := c.PostForm(g.Up().HTTPURL+"/login", url.Values{"token": {strings.TrimSpace(string(token))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	return c
}

// The rollout form's start rate and deadline reach the rollout the
// controller creates, show on its page, and a bad rate is refused with the
// form it wants and creates nothing.
func TestRolloutFormRateAndDeadline(t *testing.T) {
	g := gatewaydtest.Start(t, gatewayd.Config{ValidateSkill: validateSkill})
	ctx := context.Background()
	if _, _, err := g.Fleet().AddDevice(ctx, "operator", "pi-1", []string{"kitchen"}); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := artifact.Pack("../../configs/skills/hello.chorus", &archive); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Fleet().PublishSkill(ctx, "operator", &archive); err != nil {
		t.Fatal(err)
	}
	base := g.Up().HTTPURL
	c := signIn(t, g)
	resp, err := c.Get(base + "/rollouts")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, field := range []string{`name="rate"`, `name="deadline"`} {
		if !strings.Contains(string(page), field) {
			t.Fatalf("the rollout form has no %s field", field)
		}
	}
	csrf := csrfRE.FindStringSubmatch(string(page))[1]
	form := url.Values{"csrf": {csrf}, "skill": {"hello.chorus"}, "action": {"install"}, "target": {"tags"}, "targets": {"kitchen"}}

	bad := url.Values{"rate": {"-3"}}
	for k, v := range form {
		bad[k] = v
	}
	if resp, err = c.PostForm(base+"/rollouts", bad); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "e.g. 10/min") {
		t.Fatalf("negative rate: %d, want 400 naming the form\n%s", resp.StatusCode, body)
	}
	if rs, _ := g.Fleet().ListRollouts(ctx, fleet.RolloutFilter{}); len(rs) != 0 {
		t.Fatalf("a refused form created %d rollouts", len(rs))
	}

	form.Set("rate", "12")
	form.Set("deadline", "2h")
	if resp, err = c.PostForm(base+"/rollouts", form); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rs, _ := g.Fleet().ListRollouts(ctx, fleet.RolloutFilter{})
	if resp.StatusCode != http.StatusSeeOther || len(rs) != 1 || rs[0].RatePerMin != 12 || rs[0].Deadline.String() != "2h0m0s" {
		t.Fatalf("create: %d, rollouts %+v", resp.StatusCode, rs)
	}
	if resp, err = c.Get(base + resp.Header.Get("Location")); err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	// pi-1 never connected: its row says so.
	for _, want := range []string{"12/min", "2h0m0s after creation", "device never connected"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("rollout page lacks %q", want)
		}
	}
}
