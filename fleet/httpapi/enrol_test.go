package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
	"github.com/eclipse/paho.golang/paho"
)

// testClock only moves when a test says so.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type enrolEnv struct {
	srv *httpapi.Server
	ctl *controller.Controller
	b   *broker.Broker
	clk *testClock
}

// startEnrol runs a real broker, store, controller and server whose
// controller knows the server's URL (join tokens carry it).
func startEnrol(t *testing.T, cfg httpapi.Config) enrolEnv {
	t.Helper()
	dir := t.TempDir()
	clk := &testClock{t: time.Now().UTC()}
	b := brokertest.Start(t, broker.Config{})
	db, err := sqlite.Open(filepath.Join(dir, "fleet.db"), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: db, Broker: b, ArtifactDir: filepath.Join(dir, "artifacts"),
		ValidateSkill: validateSkill, Tick: 50 * time.Millisecond, Now: clk.Now,
		MQTTURL: b.URL(), ServerURL: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.Listener, cfg.Fleet, cfg.Token, cfg.VerifyDevice = ln, ctl, token, ctl.VerifyDevice
	srv, err := httpapi.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close(context.Background())
		ctl.Close()
		db.Close()
	})
	return enrolEnv{srv: srv, ctl: ctl, b: b, clk: clk}
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
	return v
}

// newJoinToken makes a token through the API and returns its parsed text.
func (e enrolEnv) newJoinToken(t *testing.T, body string) api.JoinToken {
	t.Helper()
	resp, b := do(t, e.srv, call{"POST", "/v1/join-tokens", body, bearer(token)}, nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create join token: %d %s", resp.StatusCode, b)
	}
	created := decode[api.JoinTokenCreated](t, b)
	tok, err := api.ParseJoinToken(created.Text)
	if err != nil || tok.URL != e.srv.URL() || tok.ID != created.Token.ID || tok.CAPin != "" {
		t.Fatalf("token text %q: %+v, %v", created.Text, tok, err)
	}
	return tok
}

func joinBody(tok api.JoinToken, device string) string {
	b, _ := json.Marshal(api.JoinRequest{Token: tok.ID, Secret: tok.Secret, Device: device})
	return string(b)
}

// mqttRefused checks that the broker refuses a CONNECT as user.
func (e enrolEnv) mqttRefused(t *testing.T, user, pass string) {
	t.Helper()
	c, err := brokertest.Connect(t, e.b.Addr(), user, pass, brokertest.ConnectOptions{ClientID: "x"})
	if err == nil {
		c.Close()
		t.Fatalf("broker accepted CONNECT as %s: a pending device must have no MQTT access", user)
	}
	if c == nil || c.Connack == nil || c.Connack.ReasonCode < 0x80 {
		t.Fatalf("CONNECT as %s: %v, want a CONNACK refusal", user, err)
	}
}

func TestJoinPendingAcceptReject(t *testing.T) {
	t.Parallel()
	e := startEnrol(t, httpapi.Config{})
	op := bearer(token)
	tok := e.newJoinToken(t, `{"tags":["kitchen"],"uses":2}`)

	resp, b := do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-1"), nil}, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("join: %d %s", resp.StatusCode, b)
	}
	jr := decode[api.JoinResponse](t, b)
	if jr.Status != api.JoinPending || jr.Pending == nil || jr.Credentials != nil {
		t.Fatalf("join answer = %s", b)
	}
	ticket := *jr.Pending
	pollJoin := call{"POST", "/v1/join/" + ticket.ID, "", bearer(ticket.Secret)}

	// Pending: not in the registry, and the broker refuses it whatever it sends.
	if resp, _ := do(t, e.srv, call{"GET", "/v1/devices/pi-1", "", op}, nil); resp.StatusCode != 404 {
		t.Errorf("pending device in the registry: %d", resp.StatusCode)
	}
	e.mqttRefused(t, "pi-1", ticket.Secret)
	e.mqttRefused(t, "pi-1", tok.Secret)
	if resp, b := do(t, e.srv, pollJoin, nil); resp.StatusCode != 202 || decode[api.JoinResponse](t, b).Status != api.JoinPending {
		t.Fatalf("poll while pending: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, e.srv, call{"POST", "/v1/join/" + ticket.ID, "", bearer("wrong")}, nil); resp.StatusCode != 401 {
		t.Errorf("poll with a wrong secret: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, e.srv, call{"GET", "/v1/pending-devices", "", op}, nil)
	pl := decode[api.PendingDevicesResponse](t, b)
	if resp.StatusCode != 200 || len(pl.Pending) != 1 || pl.Pending[0].DeviceID != "pi-1" || pl.Pending[0].Address != "127.0.0.1" || pl.Pending[0].Tags[0] != "kitchen" {
		t.Fatalf("pending list: %d %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), ticket.Secret) || strings.Contains(string(b), "sha256:") {
		t.Errorf("pending list shows a secret or its hash: %s", b)
	}

	resp, b = do(t, e.srv, call{"POST", "/v1/pending-devices/" + ticket.ID + "/accept", "", op}, nil)
	if resp.StatusCode != 200 || decode[api.DeviceResponse](t, b).Device.ID != "pi-1" {
		t.Fatalf("accept: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, e.srv, pollJoin, nil)
	jr = decode[api.JoinResponse](t, b)
	if resp.StatusCode != 200 || jr.Status != api.JoinAccepted || jr.Credentials == nil || jr.Credentials.Device != "pi-1" || jr.Credentials.ServerURL != e.srv.URL() {
		t.Fatalf("poll after accept: %d %s", resp.StatusCode, b)
	}
	brokertest.MustConnect(t, e.b.Addr(), jr.Credentials.Username, jr.Credentials.Password, brokertest.ConnectOptions{ClientID: "agent"}).Close()
	// The reply could have been lost: polling again collects fresh
	// credentials, and the first ones stop working.
	resp, b = do(t, e.srv, pollJoin, nil)
	again := decode[api.JoinResponse](t, b)
	if resp.StatusCode != 200 || again.Credentials == nil || again.Credentials.Password == jr.Credentials.Password {
		t.Fatalf("poll again after collecting: %d %s", resp.StatusCode, b)
	}
	e.mqttRefused(t, "pi-1", jr.Credentials.Password)
	// Once the device is heard from, the entry is over.
	agent := brokertest.MustConnect(t, e.b.Addr(), again.Credentials.Username, again.Credentials.Password, brokertest.ConnectOptions{ClientID: "pi-1"})
	defer agent.Close()
	publishOnline(t, agent, "pi-1")
	poll.Until(t, "pi-1 online", 10*time.Second, func() bool {
		resp, b := do(t, e.srv, call{"GET", "/v1/devices/pi-1", "", op}, nil)
		return resp.StatusCode == 200 && decode[api.DeviceResponse](t, b).Device.Online
	})
	if resp, b := do(t, e.srv, pollJoin, nil); resp.StatusCode != 404 || !strings.Contains(string(b), "join again") {
		t.Errorf("poll after the device was heard from: %d %s", resp.StatusCode, b)
	}

	// A second device, rejected.
	_, b = do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-2"), nil}, nil)
	t2 := *decode[api.JoinResponse](t, b).Pending
	if resp, b := do(t, e.srv, call{"POST", "/v1/pending-devices/" + t2.ID + "/reject", "", op}, nil); resp.StatusCode != 204 {
		t.Fatalf("reject: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, e.srv, call{"POST", "/v1/join/" + t2.ID, "", bearer(t2.Secret)}, nil); resp.StatusCode != 404 || !strings.Contains(string(b), "rejected") {
		t.Errorf("poll after reject: %d %s", resp.StatusCode, b)
	}
	e.mqttRefused(t, "pi-2", t2.Secret)

	// Both uses are spent: a third join is refused and changes nothing.
	resp, b = do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-3"), nil}, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "used up") || !strings.Contains(string(b), "token create") {
		t.Errorf("used-up token: %d %s", resp.StatusCode, b)
	}
	if _, b := do(t, e.srv, call{"GET", "/v1/pending-devices", "", op}, nil); len(decode[api.PendingDevicesResponse](t, b).Pending) != 0 {
		t.Errorf("pending after a refused join: %s", b)
	}

	es, err := e.ctl.ListAudit(context.Background(), fleet.AuditFilter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range es {
		actions = append(actions, a.Action)
	}
	for _, want := range []string{"token.create", "device.pending", "device.accept", "device.join", "device.reject"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("audit %v lacks %s", actions, want)
		}
	}
}

func TestJoinApprove(t *testing.T) {
	t.Parallel()
	e := startEnrol(t, httpapi.Config{})
	tok := e.newJoinToken(t, `{"tags":["hall"],"approve":true}`)
	resp, b := do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-a"), nil}, nil)
	jr := decode[api.JoinResponse](t, b)
	if resp.StatusCode != 201 || jr.Status != api.JoinAccepted || jr.Credentials == nil {
		t.Fatalf("approved join: %d %s", resp.StatusCode, b)
	}
	brokertest.MustConnect(t, e.b.Addr(), jr.Credentials.Username, jr.Credentials.Password, brokertest.ConnectOptions{ClientID: "agent"}).Close()
	d, err := e.ctl.GetDevice(context.Background(), "pi-a")
	if err != nil || !d.HasTag("hall") {
		t.Fatalf("device = %+v, %v", d, err)
	}
	// One use (the default): spent.
	if resp, b := do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-b"), nil}, nil); resp.StatusCode != 400 || !strings.Contains(string(b), "used up") {
		t.Errorf("second join on a single-use token: %d %s", resp.StatusCode, b)
	}
}

func TestJoinRefusals(t *testing.T) {
	t.Parallel()
	e := startEnrol(t, httpapi.Config{JoinBurst: 1000})
	op := bearer(token)
	tok := e.newJoinToken(t, `{"uses":5,"ttl_seconds":3600}`)
	revoked := e.newJoinToken(t, `{}`)
	if resp, b := do(t, e.srv, call{"DELETE", "/v1/join-tokens/" + revoked.ID, "", op}, nil); resp.StatusCode != 200 || decode[api.JoinTokenResponse](t, b).Token.RevokedAt.IsZero() {
		t.Fatalf("revoke: %d %s", resp.StatusCode, b)
	}
	do(t, e.srv, call{"POST", "/v1/devices", `{"id":"taken"}`, op}, nil)
	wrong := tok
	wrong.Secret = "nope"
	unknown := tok
	unknown.ID = "jt-unknown"
	big := fmt.Sprintf(`{"token":%q,"secret":%q,"device":"pi-1","x":%q}`, tok.ID, tok.Secret, strings.Repeat("a", api.MaxJoinBody))
	for _, c := range []struct {
		name   string
		c      call
		status int
		want   string
	}{
		{"wrong secret", call{"POST", "/v1/join", joinBody(wrong, "pi-1"), nil}, 401, "not recognised"},
		{"unknown token", call{"POST", "/v1/join", joinBody(unknown, "pi-1"), nil}, 401, "not recognised"},
		{"revoked", call{"POST", "/v1/join", joinBody(revoked, "pi-1"), nil}, 400, "revoked"},
		{"bad device id", call{"POST", "/v1/join", joinBody(tok, "bad id"), nil}, 400, "--device"},
		{"device taken", call{"POST", "/v1/join", joinBody(tok, "taken"), nil}, 409, "chorus fleet device rm taken"},
		{"too large", call{"POST", "/v1/join", big, nil}, 413, "over the limit"},
		{"unknown field", call{"POST", "/v1/join", `{"tokn":"x"}`, nil}, 400, "unknown field"},
		{"poll without secret", call{"POST", "/v1/join/p-1", "", nil}, 401, "bearer"},
		{"poll unknown", call{"POST", "/v1/join/p-nope", "", bearer("x")}, 404, "not waiting"},
		{"accept unknown", call{"POST", "/v1/pending-devices/p-nope/accept", "", op}, 404, "device pending"},
		{"reject unknown", call{"POST", "/v1/pending-devices/p-nope/reject", "", op}, 404, "device pending"},
		{"accept without operator", call{"POST", "/v1/pending-devices/p-nope/accept", "", nil}, 401, "operator token"},
		{"tokens without operator", call{"POST", "/v1/join-tokens", `{}`, nil}, 401, "operator token"},
		{"ttl too long", call{"POST", "/v1/join-tokens", `{"ttl_seconds":40000000}`, op}, 400, "--ttl"},
		{"too many uses", call{"POST", "/v1/join-tokens", `{"uses":100000}`, op}, 400, "uses"},
		{"bad tag", call{"POST", "/v1/join-tokens", `{"tags":["a b"]}`, op}, 400, "tag"},
		{"revoke unknown", call{"DELETE", "/v1/join-tokens/jt-nope", "", op}, 404, "token list"},
	} {
		resp, b := do(t, e.srv, c.c, nil)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, resp.StatusCode, b, c.status, c.want)
		}
	}
	// Nothing changed: no use counted, nothing pending.
	_, b := do(t, e.srv, call{"GET", "/v1/join-tokens", "", op}, nil)
	for _, tk := range decode[api.JoinTokensResponse](t, b).Tokens {
		if tk.Used != 0 {
			t.Errorf("token %s counted %d uses for refused joins", tk.ID, tk.Used)
		}
	}
	if _, b := do(t, e.srv, call{"GET", "/v1/pending-devices", "", op}, nil); len(decode[api.PendingDevicesResponse](t, b).Pending) != 0 {
		t.Errorf("pending after refused joins: %s", b)
	}
	// Expired: the clock passes the hour.
	e.clk.Advance(time.Hour)
	if resp, b := do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, "pi-1"), nil}, nil); resp.StatusCode != 400 || !strings.Contains(string(b), "expired") {
		t.Errorf("expired token: %d %s", resp.StatusCode, b)
	}
}

func TestJoinRateLimited(t *testing.T) {
	t.Parallel()
	e := startEnrol(t, httpapi.Config{JoinRate: 1.0 / 3600, JoinBurst: 3})
	for i := range 3 {
		if resp, b := do(t, e.srv, call{"POST", "/v1/join", `{}`, nil}, nil); resp.StatusCode != 400 {
			t.Fatalf("request %d within the burst: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, b := do(t, e.srv, call{"POST", "/v1/join/p-1", "", bearer("x")}, nil)
	if resp.StatusCode != http.StatusTooManyRequests || errorCode(b) != api.CodeRateLimited || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the burst: %d %s (Retry-After %q)", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	// The operator API is not limited.
	if resp, _ := do(t, e.srv, call{"GET", "/v1/pending-devices", "", bearer(token)}, nil); resp.StatusCode != 200 {
		t.Errorf("operator call while the join endpoint is limited: %d", resp.StatusCode)
	}
}

// An operator's other actions between a join and its collection: the id
// taken meanwhile, the accepted device removed before its agent collected
// its credentials, a reject after the accept.
func TestJoinAcceptEdgeCases(t *testing.T) {
	t.Parallel()
	e := startEnrol(t, httpapi.Config{})
	op := bearer(token)
	tok := e.newJoinToken(t, `{"uses":3}`)
	pend := func(device string) api.PendingTicket {
		t.Helper()
		resp, b := do(t, e.srv, call{"POST", "/v1/join", joinBody(tok, device), nil}, nil)
		if resp.StatusCode != 202 {
			t.Fatalf("join %s: %d %s", device, resp.StatusCode, b)
		}
		return *decode[api.JoinResponse](t, b).Pending
	}

	taken := pend("pi-c")
	do(t, e.srv, call{"POST", "/v1/devices", `{"id":"pi-c"}`, op}, nil)
	if resp, b := do(t, e.srv, call{"POST", "/v1/pending-devices/" + taken.ID + "/accept", "", op}, nil); resp.StatusCode != 409 || !strings.Contains(string(b), "chorus fleet device reject "+taken.ID) {
		t.Errorf("accept of an id taken meanwhile: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, e.srv, call{"POST", "/v1/join/" + taken.ID, "", bearer(taken.Secret)}, nil); resp.StatusCode != 202 {
		t.Errorf("poll after the refused accept: %d %s; want still pending", resp.StatusCode, b)
	}

	gone := pend("pi-d")
	if resp, b := do(t, e.srv, call{"POST", "/v1/pending-devices/" + gone.ID + "/accept", "", op}, nil); resp.StatusCode != 200 {
		t.Fatalf("accept: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, e.srv, call{"POST", "/v1/pending-devices/" + gone.ID + "/reject", "", op}, nil); resp.StatusCode != 409 || !strings.Contains(string(b), "chorus fleet device rm pi-d") {
		t.Errorf("reject after accept: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, e.srv, call{"POST", "/v1/pending-devices/" + gone.ID + "/accept", "", op}, nil); resp.StatusCode != 200 || decode[api.DeviceResponse](t, b).Device.ID != "pi-d" {
		t.Errorf("second accept: %d %s; want the device again", resp.StatusCode, b)
	}
	// Removing the device ends its enrolment with it (a later poll cannot
	// rotate a device re-created under the name).
	do(t, e.srv, call{"DELETE", "/v1/devices/pi-d", "", op}, nil)
	if resp, b := do(t, e.srv, call{"POST", "/v1/join/" + gone.ID, "", bearer(gone.Secret)}, nil); resp.StatusCode != 404 || !strings.Contains(string(b), "its device was removed") {
		t.Errorf("poll after the accepted device was removed: %d %s", resp.StatusCode, b)
	}
	if _, b := do(t, e.srv, call{"GET", "/v1/pending-devices", "", op}, nil); strings.Contains(string(b), gone.ID) {
		t.Errorf("the ended enrolment is still pending: %s", b)
	}
}

// publishOnline says "online" for dev as its agent does (retained, QoS 1,
// session 1).
func publishOnline(t *testing.T, c *brokertest.Client, dev string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + dev + "/availability", QoS: 1, Retain: true, Payload: []byte("online"),
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: "1"}}}}); err != nil {
		t.Fatalf("publish online: %v", err)
	}
}
