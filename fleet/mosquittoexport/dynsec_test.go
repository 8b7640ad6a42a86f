package mosquittoexport_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport/mosquittotest"
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
	h, err := mosquittoexport.Hash(secret)
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
	h, _ := mosquittoexport.Hash("ctl")
	out, err := mosquittoexport.RenderDynSec(append(f.accounts, orphan), f.hashes, mosquittoexport.Superuser{Username: "controller", Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	var file mosquittoexport.DynSec
	if err := json.Unmarshal(out.JSON, &file); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	if file.DefaultACLAccess != (mosquittoexport.DefaultACLAccess{Unsubscribe: true}) {
		t.Errorf("defaultACLAccess = %+v, want deny all but unsubscribe", file.DefaultACLAccess)
	}
	var users []string
	for _, c := range file.Clients {
		users = append(users, c.Username)
		if c.Iterations != mosquittoexport.Iterations || len(c.Salt) != 16 || len(c.Password) != 88 || len(c.Roles) != 1 {
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

// TestDynSecOnMosquitto loads the export into a real Mosquitto 2 with the
// dynamic-security plugin on loopback and tries each role against the rows
// of the matrix a topic ACL can express (docs/security.md).
func TestDynSecOnMosquitto(t *testing.T) {
	f := newDynFixture(t)
	h, _ := mosquittoexport.Hash("ctl-pass")
	out, err := mosquittoexport.RenderDynSec(f.accounts, f.hashes, mosquittoexport.Superuser{Username: "controller", Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	addr := mosquittotest.Start(t, mosquittotest.Config{DynSec: out.JSON}).Addr
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
