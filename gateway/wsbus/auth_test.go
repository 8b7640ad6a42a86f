package wsbus

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// dialStatus tries a websocket upgrade on url and returns the HTTP status.
func dialStatus(t *testing.T, url string) int {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: wait}
	c, resp, err := d.Dial(url, nil)
	if err == nil {
		c.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial: %v", err)
	}
	return resp.StatusCode
}

// A local process that connects without the services route gets nothing: the
// stock route /core, the base without a token, a wrong token, another path
// (issue 14, finding 2: /core gave the device's authority to any local process).
func TestUnauthenticatedRoutesRefused(t *testing.T) {
	logs := &logBuffer{}
	e := newEnv(t, Config{Logger: logs.logger()})
	base := "ws://" + e.srv.Addr()
	for _, path := range []string{"/core", "/core/", "/core/wrong-token", "/", "/other",
		"/core/skill/a.skill/" + token(e.srv.secret, "services")} {
		if got := dialStatus(t, base+path); got != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", path, got)
		}
	}
	if !strings.Contains(logs.String(), "the plain route /core has no authority") {
		t.Errorf("no log line says why /core was refused:\n%s", logs)
	}
	if strings.Contains(logs.String(), token(e.srv.secret, "services")) {
		t.Error("a refusal logged a token")
	}
}

// The services route also needs the peer's socket to belong to root, the
// server's own uid or a configured services uid.
func TestServicesRouteChecksPeerUID(t *testing.T) {
	peer := uint32(1234)
	fake := func(string, string) (uint32, error) { return peer, nil }
	e := newEnv(t, Config{peerUID: fake})
	if got := dialStatus(t, e.srv.ServicesURL()); got != http.StatusForbidden {
		t.Errorf("uid 1234 not allowed: status %d, want 403", got)
	}
	allowed := startServer(t, e.b, Config{peerUID: fake, ServicesUIDs: []uint32{5, 1234}})
	if got := dialStatus(t, allowed.ServicesURL()); got != http.StatusSwitchingProtocols {
		t.Errorf("uid 1234 allowed: status %d, want 101", got)
	}
}

// The real check: curl run as nobody with the services route (as if it had
// leaked) is refused; the same request as root is upgraded.
func TestServicesRouteRefusesOtherUserProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a client as another user needs root (CI runs the tests as root)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	e := newEnv(t, Config{})
	status := func(cred *syscall.Credential) string {
		cmd := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", "--http1.1",
			"-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
			"-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "http://"+e.srv.Addr()+e.srv.ServicesRoute())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, _ := cmd.Output() // curl exits 28 when the upgraded connection times out
		return string(out)
	}
	if got := status(&syscall.Credential{Uid: 65534, Gid: 65534}); got != "403" {
		t.Errorf("nobody on the services route: HTTP %s, want 403", got)
	}
	if got := status(nil); got != "101" {
		t.Errorf("root on the services route: HTTP %s, want 101", got)
	}
}

// loopbackPeerUID finds the owner of the other end of a loopback connection.
func TestLoopbackPeerUID(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			host := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
			ln, err := net.Listen(network, host)
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, _ := ln.Accept()
				accepted <- c
			}()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc := <-accepted
			defer sc.Close()
			uid, err := loopbackPeerUID(sc.LocalAddr().String(), sc.RemoteAddr().String())
			if err != nil || int(uid) != os.Geteuid() {
				t.Fatalf("peer uid = %d, %v; want %d", uid, err, os.Geteuid())
			}
		})
	}
	if _, err := loopbackPeerUID("127.0.0.1:1", "192.0.2.7:5000"); err == nil {
		t.Error("a peer on another host was given a uid")
	}
}

// skillEnv adds skill routes: DialSkill opens an MQTT connection with the
// skill's own signed credentials, as the agent does.
func skillEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{dev: brokertest.NewDevice(t, testDevice)}
	e.b = brokertest.Start(t, broker.Config{}, e.dev.Account)
	cfg.DialSkill = func(ctx context.Context, skill string) (SkillTransport, error) {
		user := skillcred.Username(testDevice, skill)
		return bus.DialMQTT(ctx, bus.MQTTConfig{
			URL: "mqtt://" + e.b.Addr(), ClientID: user + "/ws", Username: user,
			Password: skillcred.Mint(e.dev.Key, 1, testDevice, skill), CleanStart: true,
		})
	}
	e.srv = startServer(t, e.b, cfg)
	return e
}

// A skill's websocket client has the skill's authority, not the device's:
// what the broker refuses a skill on MQTT (management and connectivity
// types, a forged context.skill_id) reaches nobody, and what it may send
// reaches everyone once, itself included. Services frames are the only ones
// the server hands to OnServicesFrame.
func TestSkillRouteHasSkillAuthority(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	e := skillEnv(t, Config{OnServicesFrame: func(m envelope.Message) {
		mu.Lock()
		seen = append(seen, m.Type)
		mu.Unlock()
	}})
	obs := e.mqtt(t, "observer")
	services := dial(t, e.srv)
	skill := dialSkill(t, e.srv, "good.skill")

	refused := []string{
		msg("skillmanager.deactivate"),
		msg("mycroft.internet.disconnected"),
		msg("ovos.skills.install"),
		`{"type":"forged.id","data":{},"context":{"skill_id":"other.skill"}}`,
	}
	for _, f := range refused {
		send(t, skill, f)
	}
	ok := `{"type":"good.skill.hello","data":{},"context":{"skill_id":"good.skill"}}`
	send(t, skill, ok)
	barrier := msg("test.barrier")
	send(t, services, barrier)

	wantOnce(t, "skill client", countWS(t, skill, ok, barrier), ok, barrier)
	wantOnce(t, "services client", countWS(t, services, ok, barrier), ok, barrier)
	wantOnce(t, "mqtt observer", countMQTT(t, obs, ok, barrier), ok, barrier)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "test.barrier" {
		t.Errorf("OnServicesFrame saw %v, want only the services client's test.barrier", seen)
	}
}

// A skill route opens only its own skill: another skill's token, a token for
// an invalid id, or skill routes switched off are refused.
func TestSkillRouteTokenIsPerSkill(t *testing.T) {
	e := skillEnv(t, Config{})
	base := "ws://" + e.srv.Addr()
	tokA := token(e.srv.secret, "skill\x00a.skill")
	for name, path := range map[string]string{
		"another skill's token": "/core/skill/b.skill/" + tokA,
		"invalid id":            "/core/skill/../" + tokA,
		"no token":              "/core/skill/a.skill",
	} {
		if got := dialStatus(t, base+path); got != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, got)
		}
	}
	if got := dialStatus(t, e.srv.SkillURL("a.skill")); got != http.StatusSwitchingProtocols {
		t.Errorf("a.skill's own route: status %d, want 101", got)
	}
	off := startServer(t, e.b, Config{Secret: e.srv.secret})
	if got := dialStatus(t, off.SkillURL("a.skill")); got != http.StatusForbidden {
		t.Errorf("skill routes off: status %d, want 403", got)
	}
}

// Routes derive from the secret alone: the same secret gives the same
// routes across restarts, so OVOS services keep working after the agent
// restarts; another secret gives others.
func TestRoutesFollowSecret(t *testing.T) {
	e := newEnv(t, Config{})
	secret := bytes.Repeat([]byte{7}, 32)
	a := startServer(t, e.b, Config{Secret: secret})
	b := startServer(t, e.b, Config{Secret: secret})
	c := startServer(t, e.b, Config{})
	if a.ServicesRoute() != b.ServicesRoute() || a.SkillRoute("x") != b.SkillRoute("x") {
		t.Error("one secret gave different routes")
	}
	if a.ServicesRoute() == c.ServicesRoute() || a.SkillRoute("x") == a.SkillRoute("y") {
		t.Error("different secrets or skills share a route")
	}
	if !strings.HasPrefix(a.ServicesRoute(), DefaultRoute+"/") {
		t.Errorf("services route %q is not under %s", a.ServicesRoute(), DefaultRoute)
	}
}

func TestMaxClients(t *testing.T) {
	e := newEnv(t, Config{MaxClients: 2})
	dial(t, e.srv)
	dial(t, e.srv)
	if got := dialStatus(t, e.srv.ServicesURL()); got != http.StatusServiceUnavailable {
		t.Errorf("third connection: status %d, want 503", got)
	}
}

// logBuffer collects a text log for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }
