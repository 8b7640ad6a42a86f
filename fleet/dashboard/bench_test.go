package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// validateSkill is cmd/chorus's wiring: the agent's discovery rules.
func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description}, nil
}

// seedFleet registers n devices in the gateway's store before it starts:
// two thirds online, every fifth with a failed skill, each reporting three
// skills, as a fleet in use would look.
func seedFleet(tb testing.TB, dataDir string, n int) {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dataDir, "fleet.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("dev-%05d", i)
	}
	if _, err := fleetbench.Seed(ctx, st, ids, []string{"bench"}); err != nil {
		tb.Fatal(err)
	}
	for i, id := range ids {
		state := "loaded"
		if i%5 == 0 {
			state = "failed"
		}
		rep := fmt.Sprintf(`{"applied_version":0,"skills":[{"id":"a.bench","version":"1.0.0","state":"loaded"},`+
			`{"id":"b.bench","version":"1.0.0","state":"loaded"},{"id":"c.bench","version":"1.0.0","state":%q,"error":"exit status 1"}]}`, state)
		if err := st.UpdateReported(ctx, id, []byte(rep), 0); err != nil {
			tb.Fatal(err)
		}
		if i%3 != 0 {
			if _, err := st.UpdatePresence(ctx, id, fleet.Presence{Online: true, Session: 1, At: time.Now()}); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// signedIn returns a client with a dashboard session on the gateway.
func signedIn(tb testing.TB, base, dataDir string) *http.Client {
	tb.Helper()
	token, err := os.ReadFile(filepath.Join(dataDir, localauth.TokenFile))
	if err != nil {
		tb.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 5 * time.Minute}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {strings.TrimSpace(string(token))}})
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/" || resp.StatusCode != http.StatusOK {
		tb.Fatalf("sign in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	return c
}

func get(tb testing.TB, c *http.Client, u string) {
	resp, err := c.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
}

// BenchmarkPages10k is each page's time from request to last byte, on
// loopback, with 10,000 devices registered (docs/benchmarks.md; the issue
// asks for < 200 ms of server time).
func BenchmarkPages10k(b *testing.B) {
	cfg := gatewaydtest.Loopback(b)
	seedFleet(b, cfg.DataDir, 10000)
	start := time.Now()
	g := gatewaydtest.Start(b, gatewayd.Config{Config: cfg, ValidateSkill: validateSkill})
	archive, err := fleetbench.SkillArchive(b.TempDir(), "a.bench", "1.0.0", 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Fleet().PublishSkill(context.Background(), "operator", bytes.NewReader(archive)); err != nil {
		b.Fatal(err)
	}
	base := g.Up().HTTPURL
	c := signedIn(b, base, cfg.DataDir) // the overview waits for the view's first load
	b.Logf("gateway start to the first overview (the view's first load of 10,000 devices): %s", time.Since(start))
	for _, p := range []string{"/", "/devices", "/devices?state=offline&page=20", "/devices?tag=bench&q=dev-09",
		"/devices/dev-05000", "/skills", "/skills/a.bench", "/rollouts", "/audit"} {
		b.Run(strings.NewReplacer("/", "_", "?", "_", "&", "_", "=", "-").Replace(p), func(b *testing.B) {
			for b.Loop() {
				get(b, c, base+p)
			}
		})
	}
}
