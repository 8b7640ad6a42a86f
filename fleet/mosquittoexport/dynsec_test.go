package mosquittoexport

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// dynFixture is a small fleet: two devices, a skill of pi-1 (with a grant of
// one management type), an integration allowed one bus type, an operator
// and the controller.
type dynFixture struct {
	accounts []broker.Account
	hashes   map[string]string
	secrets  map[string]string // username -> password, for every exported account
	devices  map[string]brokertest.Device
}

func newDynFixture(t *testing.T) dynFixture {
	t.Helper()
	f := dynFixture{hashes: map[string]string{}, secrets: map[string]string{}, devices: map[string]brokertest.Device{}}
	for _, id := range []string{"pi-1", "pi-2"} {
		d := brokertest.NewDevice(t, id)
		f.devices[id] = d
		f.add(t, d.Account, d.Secret)
	}
	in, inSecret := brokertest.NewIntegration(t, "ha", "speak")
	f.add(t, in, inSecret)
	op, opSecret := brokertest.NewOperator(t, "alice")
	f.add(t, op, opSecret)
	pi1 := f.devices["pi-1"]
	for _, s := range []struct {
		id    string
		allow []string
	}{{"hello", nil}, {"store", []string{"ovos.skills.install"}}} {
		sk := broker.SkillAccount("pi-1", s.id)
		sk.AllowTypes = s.allow
		f.accounts = append(f.accounts, sk)
		f.secrets[sk.Username] = skillcred.MintDerived(skillcred.DeriveKey(pi1.Secret), pi1.Account.KeyVersion, "pi-1", s.id)
	}
	return f
}

func (f *dynFixture) add(t *testing.T, a broker.Account, secret string) {
	h, err := Hash(secret)
	if err != nil {
		t.Fatal(err)
	}
	f.accounts = append(f.accounts, a)
	f.hashes[a.Username] = h
	f.secrets[a.Username] = secret
}

func TestRenderDynSec(t *testing.T) {
	f := newDynFixture(t)
	delete(f.hashes, "pi-2")
	orphan := broker.SkillAccount("pi-9", "x")
	h, _ := Hash("ctl")
	out, err := RenderDynSec(append(f.accounts, orphan), f.hashes, Superuser{Username: "controller", Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	var file DynSec
	if err := json.Unmarshal(out.JSON, &file); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	if file.DefaultACLAccess != (DefaultACLAccess{Unsubscribe: true}) {
		t.Errorf("defaultACLAccess = %+v, want deny all but unsubscribe", file.DefaultACLAccess)
	}
	var users []string
	for _, c := range file.Clients {
		users = append(users, c.Username)
		if c.Iterations != Iterations || len(c.Salt) != 16 || len(c.Password) != 88 || len(c.Roles) != 1 {
			t.Errorf("client %s: %+v", c.Username, c)
		}
	}
	want := []string{"controller", "integration:ha", "operator:alice", "pi-1", "skill:pi-1:hello", "skill:pi-1:store"}
	if !slices.Equal(users, want) {
		t.Errorf("clients = %v, want %v", users, want)
	}
	wantSkipped := []string{
		"pi-2: no Mosquitto hash recorded for its current secret (rotate it to record one)",
		"skill:pi-9:x: its device is not in the table",
	}
	if !slices.Equal(out.Skipped, wantSkipped) {
		t.Errorf("skipped = %q, want %q", out.Skipped, wantSkipped)
	}
	var groups []string
	for _, g := range file.Groups {
		groups = append(groups, fmt.Sprintf("%s=%d", g.Groupname, len(g.Clients)))
	}
	if want := []string{"chorus-controllers=1", "chorus-devices=1", "chorus-integrations=1", "chorus-operators=1", "chorus-skills=2"}; !slices.Equal(groups, want) {
		t.Errorf("groups = %v, want %v", groups, want)
	}
}

func TestLiteralDenials(t *testing.T) {
	tests := []struct {
		name       string
		deny       []string
		allow      []string
		want, omit []string
	}{
		{"skill defaults", broker.SkillDenyTypes, nil,
			[]string{"ovos.skills.install", "ovos.skills.uninstall.failed", "skillmanager.deactivate", "mycroft.gui.available", "ovos.pip.install"}, nil},
		{"granted type", broker.SkillDenyTypes, []string{"ovos.skills.install"},
			[]string{"ovos.skills.uninstall"}, []string{"ovos.skills.install"}},
		{"granted pattern", broker.SkillDenyTypes, []string{"skillmanager.*"},
			[]string{"ovos.pip.install"}, []string{"skillmanager.rescan", "skillmanager.list"}},
		{"exact type", []string{"speak"}, nil, []string{"speak"}, []string{"ovos.pip.install"}},
		{"nothing denied", nil, nil, nil, []string{"ovos.pip.install"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := literalDenials(broker.Account{DenyTypes: tc.deny, AllowTypes: tc.allow})
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not denied; got %v", w, got)
				}
			}
			for _, o := range tc.omit {
				if slices.Contains(got, o) {
					t.Errorf("%s denied; got %v", o, got)
				}
			}
		})
	}
}

// TestDynSecOnMosquitto loads the export into a real Mosquitto 2 with the
// dynamic-security plugin on loopback and tries each role against the rows
// of the matrix a topic ACL can express (docs/security.md).
func TestDynSecOnMosquitto(t *testing.T) {
	f := newDynFixture(t)
	h, _ := Hash("ctl-pass")
	out, err := RenderDynSec(f.accounts, f.hashes, Superuser{Username: "controller", Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	addr := startMosquitto(t, out.JSON)
	connect := func(user string) *brokertest.Client {
		t.Helper()
		pass := f.secrets[user]
		if user == "controller" {
			pass = "ctl-pass"
		}
		return brokertest.MustConnect(t, addr, user, pass, brokertest.ConnectOptions{ClientID: "c-" + strings.ReplaceAll(user, ":", "-")})
	}

	t.Run("authentication", func(t *testing.T) {
		pi1 := f.devices["pi-1"]
		refused := map[string][2]string{
			"wrong device secret":          {"pi-1", "wrong"},
			"signed skill credential":      {"skill:pi-1:hello", skillcred.Mint(pi1.Key, 1, "pi-1", "hello")},
			"another skill's credential":   {"skill:pi-1:evil", f.secrets["skill:pi-1:hello"]},
			"skill the export did not see": {"skill:pi-1:other", skillcred.MintDerived(skillcred.DeriveKey(pi1.Secret), 1, "pi-1", "other")},
			"device secret as skill":       {"skill:pi-1:hello", pi1.Secret},
		}
		for name, c := range refused {
			if _, err := brokertest.Connect(t, addr, c[0], c[1], brokertest.ConnectOptions{ClientID: "bad"}); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})

	watch := connect("controller")
	if rc := watch.Sub(t, "chorus/v1/#"); rc > 2 {
		t.Fatalf("controller subscribe refused: %#x", rc)
	}
	rows := []struct {
		user               string
		allowed, refused   []string // publishes
		subOK, subRefused  []string
		ownBus             string
		retainedStateTopic string
	}{
		{user: "pi-1",
			allowed:    []string{"chorus/v1/pi-1/availability", "chorus/v1/pi-1/bus/ovos.skills.install"},
			refused:    []string{"chorus/v1/pi-1/desired", "chorus/v1/pi-1/skill/x/update", "chorus/v1/pi-2/bus/speak", "chorus/v1/pi-2/availability", "chorus/v1/pi-1/skill/x/set"},
			subOK:      []string{"chorus/v1/pi-1/#", "chorus/v1/pi-1/desired"},
			subRefused: []string{"chorus/v1/pi-2/#", "chorus/v1/#", "chorus/v1/+/bus/+", "$SYS/#"}},
		{user: "skill:pi-1:hello",
			allowed:    []string{"chorus/v1/pi-1/bus/speak"},
			refused:    []string{"chorus/v1/pi-1/bus/ovos.skills.install", "chorus/v1/pi-1/bus/skillmanager.deactivate", "chorus/v1/pi-1/bus/mycroft.internet.connected", "chorus/v1/pi-1/availability", "chorus/v1/pi-1/skills", "chorus/v1/pi-1/desired", "chorus/v1/pi-2/bus/speak", "chorus/v1/pi-1/skill/x/set"},
			subOK:      []string{"chorus/v1/pi-1/bus/+", "chorus/v1/pi-1/bus/speak"},
			subRefused: []string{"chorus/v1/pi-1/#", "chorus/v1/pi-1/desired", "chorus/v1/pi-2/bus/+"}},
		{user: "skill:pi-1:store", // granted ovos.skills.install only
			allowed: []string{"chorus/v1/pi-1/bus/ovos.skills.install"},
			refused: []string{"chorus/v1/pi-1/bus/ovos.skills.uninstall"}},
		{user: "integration:ha",
			allowed:    []string{"chorus/v1/pi-2/skill/hello/set", "chorus/v1/pi-1/skill/hello/update/set", "homeassistant/status", "chorus/v1/pi-1/bus/speak"},
			refused:    []string{"chorus/v1/pi-1/bus/ovos.skills.install", "chorus/v1/pi-1/desired", "chorus/v1/pi-1/availability", "chorus/v1/pi-1/skill/hello/update", "homeassistant/sensor/x/config"},
			subOK:      []string{"chorus/v1/#", "homeassistant/#"},
			subRefused: []string{"$SYS/#", "#"}},
		{user: "operator:alice",
			allowed:    []string{"chorus/v1/pi-2/bus/ovos.skills.install"},
			refused:    []string{"chorus/v1/pi-1/desired", "chorus/v1/pi-1/skill/hello/set", "chorus/v1/pi-1/availability", "homeassistant/status"},
			subOK:      []string{"chorus/v1/#", "$SYS/#"},
			subRefused: []string{"#"}},
	}
	for _, r := range rows {
		t.Run(r.user, func(t *testing.T) {
			c := connect(r.user)
			for _, topic := range r.refused {
				if rc := c.Pub(t, topic, []byte("{}"), false); rc < 0x80 {
					t.Errorf("publish %s: reason %#x, want a refusal", topic, rc)
				}
			}
			for _, topic := range r.allowed {
				if rc := c.Pub(t, topic, []byte("{}"), false); rc >= 0x80 { // 0x10: no subscribers
					t.Errorf("publish %s: reason %#x, want accepted", topic, rc)
				}
			}
			// The watcher sees exactly the allowed publishes, in order:
			// a refused publish reached no subscriber.
			for _, topic := range r.allowed {
				if !strings.HasPrefix(topic, "chorus/v1/") {
					continue
				}
				if m, ok := watch.Next(5 * time.Second); !ok || m.Topic != topic {
					t.Fatalf("delivered %v, %v; want %s", m, ok, topic)
				}
			}
			if m, ok := watch.Next(200 * time.Millisecond); ok {
				t.Fatalf("Mosquitto delivered a refused publish: %s", m.Topic)
			}
			for _, fl := range r.subOK {
				if rc := c.Sub(t, fl); rc > 2 {
					t.Errorf("subscribe %s: reason %#x, want granted", fl, rc)
				}
			}
			for _, fl := range r.subRefused {
				if rc := c.Sub(t, fl); rc < 0x80 {
					t.Errorf("subscribe %s: reason %#x, want refused", fl, rc)
				}
			}
		})
	}
}

// startMosquitto runs mosquitto with the dynamic-security plugin reading
// body, on a free loopback port, for the test's lifetime. Without mosquitto
// or the plugin the test is skipped outside CI and fails in CI.
func startMosquitto(t *testing.T, body []byte) string {
	t.Helper()
	bin, _ := exec.LookPath("mosquitto")
	plugin := FindPlugin()
	if bin == "" || plugin == "" {
		if os.Getenv("CI") == "" {
			t.Skip("mosquitto or its dynamic-security plugin is missing (apt-get install mosquitto)")
		}
		t.Fatal("mosquitto or its dynamic-security plugin is missing in CI")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dynamic-security.json"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	conf := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\nlistener %s 127.0.0.1\npersistence false\n"+
		"plugin %s\nplugin_opt_config_file %s\nlog_dest stdout\nlog_type all\n",
		port, plugin, filepath.Join(dir, "dynamic-security.json"))
	if os.Getuid() == 0 { // mosquitto drops root for "mosquitto", who cannot read our 0600 files
		if u, err := user.Current(); err == nil {
			conf += "user " + u.Username + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", filepath.Join(dir, "mosquitto.conf"))
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("mosquitto log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s:\n%s", addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
