package enrol_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/enrol"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// gateway starts a real gateway and returns an operator client.
func gateway(t *testing.T) *fleetclient.Client {
	t.Helper()
	g := gatewaydtest.Start(t, gatewayd.Config{})
	c, err := fleetclient.New(fleetclient.Config{BaseURL: g.Up().HTTPURL, Token: g.Token()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newToken(t *testing.T, c *fleetclient.Client, approve bool) string {
	t.Helper()
	out, err := c.CreateJoinToken(context.Background(), api.CreateJoinTokenRequest{Uses: 3, Approve: approve})
	if err != nil {
		t.Fatal(err)
	}
	return out.Text
}

func fastPoll(dataDir, token, device string) enrol.Config {
	return enrol.Config{Token: token, DataDir: dataDir, Device: device, PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond}
}

// checkFiles: the credentials file is 0600 in a 0700 dir and names device.
func checkFiles(t *testing.T, dataDir, device string) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dataDir, enrol.Dir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("enrolment dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	path := enrol.CredentialsPath(dataDir)
	fi, err = os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode: %v, %v; want 0600", fi, err)
	}
	c, err := configs.ReadAgentCredentials(path)
	if err != nil || c.Device != device {
		t.Errorf("credentials file = %+v, %v", c, err)
	}
	if _, err := os.Stat(enrol.PendingPath(dataDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pending file left behind: %v", err)
	}
}

// waitPending waits until the gateway lists device as pending.
func waitPending(t *testing.T, c *fleetclient.Client, device string) fleet.PendingDevice {
	t.Helper()
	var pending fleet.PendingDevice
	poll.Until(t, device+" pending", 30*time.Second, func() bool {
		ps, err := c.PendingDevices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.DeviceID == device {
				pending = p
				return true
			}
		}
		return false
	})
	return pending
}

type result struct {
	creds configs.AgentCredentials
	err   error
}

func runAsync(ctx context.Context, cfg enrol.Config) <-chan result {
	ch := make(chan result, 1)
	go func() {
		c, err := enrol.Run(ctx, cfg)
		ch <- result{c, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("enrol.Run did not return")
	}
	return result{}
}

func TestRunApprovedThenReusesCredentials(t *testing.T) {
	t.Parallel()
	c := gateway(t)
	dir := filepath.Join(t.TempDir(), "data")
	creds, err := enrol.Run(context.Background(), fastPoll(dir, newToken(t, c, true), "pi-a"))
	if err != nil || creds.Device != "pi-a" || creds.Password == "" {
		t.Fatalf("Run = %+v, %v", creds, err)
	}
	checkFiles(t, dir, "pi-a")
	// Enrolled: a second run ignores the token (here not even one) and asks nothing.
	again, err := enrol.Run(context.Background(), fastPoll(dir, "not a token", ""))
	if err != nil || again != creds {
		t.Errorf("second Run = %+v, %v; want the saved credentials", again, err)
	}
}

func TestRunWaitsForAccept(t *testing.T) {
	t.Parallel()
	c := gateway(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, enrol.Dir), 0o755) // narrowed by Run: it will hold secrets
	token := newToken(t, c, false)

	// The first run is stopped while pending; the next one resumes the same
	// enrolment without spending another use of the token.
	ctx, cancel := context.WithCancel(context.Background())
	first := runAsync(ctx, fastPoll(dir, token, "pi-p"))
	p := waitPending(t, c, "pi-p")
	var fi os.FileInfo
	var err error
	werr := poll.Wait(context.Background(), "the pending file", 30*time.Second, func() bool {
		fi, err = os.Stat(enrol.PendingPath(dir))
		return err == nil
	})
	if werr != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("pending file: %v, %v (%v)", fi, err, werr)
	}
	cancel()
	if r := await(t, first); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("stopped Run = %v", r.err)
	}
	second := runAsync(context.Background(), fastPoll(dir, "", ""))
	if _, err := c.AcceptPending(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	r := await(t, second)
	if r.err != nil || r.creds.Device != "pi-p" {
		t.Fatalf("Run after accept = %+v, %v", r.creds, r.err)
	}
	checkFiles(t, dir, "pi-p")
	ts, _ := c.JoinTokens(context.Background())
	if len(ts) != 1 || ts[0].Used != 1 {
		t.Errorf("tokens = %+v; want one use spent", ts)
	}
}

func TestRunRejected(t *testing.T) {
	t.Parallel()
	c := gateway(t)
	dir := t.TempDir()
	ch := runAsync(context.Background(), fastPoll(dir, newToken(t, c, false), "pi-r"))
	p := waitPending(t, c, "pi-r")
	if err := c.RejectPending(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch)
	if r.err == nil || !strings.Contains(r.err.Error(), "rejected") {
		t.Fatalf("Run after reject = %v; want an error saying it was rejected", r.err)
	}
	for _, f := range []string{enrol.CredentialsPath(dir), enrol.PendingPath(dir)} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after reject: %v", f, err)
		}
	}
}

func TestRunRefusals(t *testing.T) {
	t.Parallel()
	c := gateway(t)
	good, err := api.ParseJoinToken(newToken(t, c, true))
	if err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Secret = "wrong"
	for _, tc := range []struct{ name, token, device, want string }{
		{"not a token", "hello", "pi-x", "chorus fleet token create"},
		{"wrong secret", bad.String(), "pi-x", "not recognised"},
		{"bad device", good.String(), "-x", "--device"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		_, err := enrol.Run(context.Background(), fastPoll(dir, tc.token, tc.device))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused join left the data dir behind: %v", tc.name, err)
		}
	}
}

// TestPinnedClient: with a pin, a server whose chain lacks the pinned
// certificate is refused in the handshake, before any request reaches it.
func TestPinnedClient(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"join token not recognised"}}`))
	}))
	defer srv.Close()
	sum := sha256.Sum256(srv.Certificate().Raw)
	right := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("ab", 32)

	c, err := enrol.Client(srv.URL, wrong)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Join(context.Background(), api.JoinRequest{Token: "jt-1", Secret: "s", Device: "pi"})
	if err == nil || !strings.Contains(err.Error(), "pin") || reached.Load() != 0 {
		t.Fatalf("wrong pin: %v (requests reached: %d); want a pin error before any request", err, reached.Load())
	}
	c, err = enrol.Client(srv.URL, right)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Join(context.Background(), api.JoinRequest{Token: "jt-1", Secret: "s", Device: "pi"})
	if !fleetclient.IsCode(err, api.CodeUnauthorized) || reached.Load() != 1 {
		t.Fatalf("right pin: %v (requests reached: %d); want the server's answer", err, reached.Load())
	}
}

func TestIDFromHostname(t *testing.T) {
	for in, want := range map[string]string{
		"raspberrypi":           "raspberrypi",
		"Pi-Kitchen.local":      "pi-kitchen",
		"living room pi":        "living-room-pi",
		"--x":                   "x",
		strings.Repeat("a", 80): strings.Repeat("a", 64),
	} {
		if got := enrol.IDFromHostname(in); got != want {
			t.Errorf("IDFromHostname(%q) = %q, want %q", in, got, want)
		}
	}
}
