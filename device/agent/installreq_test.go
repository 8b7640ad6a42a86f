package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// requester sends OVOS-INSTALL-1 requests as an operator (the broker lets
// operators and the device's own local services send them; skills may not)
// and matches the answers by MQTT correlation data.
type requester struct {
	c   *brokertest.Client
	dev string
	seq atomic.Int64
}

// replyTypes are the answers of every request type the agent takes.
var replyTypes = []string{
	"ovos.pip.install.complete", "ovos.pip.install.failed",
	"ovos.pip.uninstall.complete", "ovos.pip.uninstall.failed",
	"ovos.skills.install.complete", "ovos.skills.install.failed",
	"ovos.skills.uninstall.complete", "ovos.skills.uninstall.failed",
}

func newRequester(t *testing.T, b *broker.Broker, user, secret, dev string) *requester {
	t.Helper()
	c := brokertest.MustConnect(t, b.Addr(), user, secret, brokertest.ConnectOptions{ClientID: "requester"})
	for _, typ := range replyTypes {
		c.Sub(t, "chorus/v1/"+dev+"/bus/"+typ)
	}
	return &requester{c: c, dev: dev}
}

// send publishes a request of typ with data and returns its correlation data.
func (r *requester) send(t *testing.T, typ string, data map[string]any) []byte {
	t.Helper()
	m := envelope.New(typ, data)
	m.Context["source"] = "tester"
	m.Context["destination"] = "chorus"
	payload, err := envelope.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	corr := []byte("req-" + strconv.FormatInt(r.seq.Add(1), 10))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = r.c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + r.dev + "/bus/" + typ, QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{CorrelationData: corr}})
	if err != nil {
		t.Fatalf("publish %s: %v", typ, err)
	}
	return corr
}

// answer is one reply: its type, data and correlation data.
type answer struct {
	typ  string
	data map[string]any
	ctx  map[string]any
	corr string
}

// next returns the next answer to any request, failing after d.
func (r *requester) next(t *testing.T, d time.Duration) answer {
	t.Helper()
	p, ok := r.c.Next(d)
	if !ok {
		t.Fatalf("no answer within %s", d)
	}
	m, err := envelope.Decode(p.Payload)
	if err != nil {
		t.Fatalf("answer on %s: %v", p.Topic, err)
	}
	a := answer{typ: m.Type, data: m.Data, ctx: m.Context}
	if p.Properties != nil {
		a.corr = string(p.Properties.CorrelationData)
	}
	return a
}

// answerTo waits for the reply carrying corr. Events without correlation
// data (the installer's own ovos.skills.install.complete) are skipped; a
// reply to another request is an error.
func (r *requester) answerTo(t *testing.T, corr []byte, d time.Duration) answer {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		a := r.next(t, time.Until(deadline))
		switch a.corr {
		case string(corr):
			return a
		case "":
			continue
		}
		t.Fatalf("answer %+v, want the one to %s", a, corr)
	}
}

// TestInstallRequestChecks covers what the agent answers without asking
// the gateway: the closed gate, no packages, a URL, and the topics.
func TestInstallRequestChecks(t *testing.T) {
	t.Parallel()
	pkgs := map[string]any{"packages": []any{"hello.test"}}
	tests := []struct {
		name          string
		allowPip      bool
		typ           string
		data          map[string]any
		wantType      string
		wantErr       string
		wantDetailHas string
	}{
		{"gate closed pip", false, "ovos.pip.install", pkgs, "ovos.pip.install.failed", ErrorDisabled, ""},
		{"gate closed pip uninstall", false, "ovos.pip.uninstall", pkgs, "ovos.pip.uninstall.failed", ErrorDisabled, ""},
		{"gate closed skills", false, "ovos.skills.install", pkgs, "ovos.skills.install.failed", ErrorDisabled, ""},
		{"gate closed skills uninstall", false, "ovos.skills.uninstall", pkgs, "ovos.skills.uninstall.failed", ErrorDisabled, ""},
		{"gate closed our service name", false, "ovos.pip.install",
			map[string]any{"packages": []any{"hello.test"}, "service_name": ServiceName}, "ovos.pip.install.failed", ErrorDisabled, ""},
		{"gate closed no packages", false, "ovos.pip.install", map[string]any{}, "ovos.pip.install.failed", ErrorDisabled, ""},
		{"suffixed answers on the base type", false, "ovos.pip.install." + ServiceName, pkgs, "ovos.pip.install.failed", ErrorDisabled, ""},
		{"suffixed skills", false, "ovos.skills.uninstall." + ServiceName, pkgs, "ovos.skills.uninstall.failed", ErrorDisabled, ""},
		{"packages absent", true, "ovos.pip.install", map[string]any{}, "ovos.pip.install.failed", ErrorNoPackages, ""},
		{"packages empty", true, "ovos.skills.install", map[string]any{"packages": []any{}}, "ovos.skills.install.failed", ErrorNoPackages, ""},
		{"packages null", true, "ovos.pip.uninstall", map[string]any{"packages": nil}, "ovos.pip.uninstall.failed", ErrorNoPackages, ""},
		{"url", true, "ovos.skills.install", map[string]any{"url": "https://github.com/x/y"}, "ovos.skills.install.failed", "skill url validation failed", "not URLs"},
		{"packages not a list", true, "ovos.pip.install", map[string]any{"packages": "hello.test"}, "ovos.pip.install.failed", "skill url validation failed", "list"},
		{"no gateway", true, "ovos.pip.install", pkgs, "ovos.pip.install.failed", "error in pip subprocess", "connect"},
	}
	for _, gate := range []bool{false, true} {
		r := startBusAgent(t, gate, "http://127.0.0.1:1") // nothing listens there
		for _, tc := range tests {
			if tc.allowPip != gate {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				corr := r.send(t, tc.typ, tc.data)
				got := r.answerTo(t, corr, wait)
				if got.typ != tc.wantType || got.data["error"] != tc.wantErr {
					t.Fatalf("answer %s %v, want %s error %q", got.typ, got.data, tc.wantType, tc.wantErr)
				}
				if detail, _ := got.data["detail"].(string); !strings.Contains(detail, tc.wantDetailHas) {
					t.Fatalf("detail %q, want it to mention %q", detail, tc.wantDetailHas)
				}
				// MSG-1 reply: source and destination swapped back to the requester.
				if got.ctx["destination"] != "tester" || got.ctx["source"] != "chorus" {
					t.Fatalf("reply context %v, want source chorus, destination tester", got.ctx)
				}
			})
		}
	}
}

// startBusAgent runs a broker and pi-1's agent without a gateway, and
// returns a requester connected as an operator.
func startBusAgent(t *testing.T, allowPip bool, serverURL string) *requester {
	t.Helper()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "asker")
	b := brokertest.Start(t, broker.Config{}, dev.Account, op)
	cfg := Config{
		Device: "pi-1", MQTTURL: "mqtt://" + b.Addr(), Username: "pi-1", Password: dev.Secret,
		Key: dev.Key, KeyVersion: 1, DataDir: skillusertest.OpenDir(t), ServerURL: serverURL,
		Skills: testSkills(t), Connectivity: configs.Connectivity{CheckInterval: 60},
		WillDelay: time.Second, Version: "test", Logger: brokertest.Logger(t),
	}
	cfg.Skills.Installer.AllowPip = allowPip
	a, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return newRequester(t, b, op.Username, opSecret, "pi-1")
}

// A request naming another installer is left to it: no answer at all. The
// barrier, a request of the same type sent after it, is answered first.
func TestInstallRequestOtherServiceIgnored(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_pip=%v", gate), func(t *testing.T) {
			r := startBusAgent(t, gate, "")
			r.send(t, "ovos.pip.install", map[string]any{"packages": []any{"hello.test"}, "service_name": "ovos_core"})
			r.send(t, "ovos.pip.install", map[string]any{"service_name": "ovos_core"})
			barrier := r.send(t, "ovos.pip.install", map[string]any{}) // answered at once either way
			if got := r.next(t, wait); got.corr != string(barrier) {
				t.Fatalf("first answer %+v, want the barrier's (%s): the other installer's request was answered", got, barrier)
			}
			if got, ok := r.c.Next(200 * time.Millisecond); ok {
				t.Fatalf("unexpected answer on %s after the barrier", got.Topic)
			}
		})
	}
}

// fleetEnv is a gateway (broker, SQLite, controller, HTTP API) with pi-1
// enrolled and its agent running, allow_pip on.
type fleetEnv struct {
	b      *broker.Broker
	artDir string
	ctl    *controller.Controller
	obs    *brokertest.Client // the skills topic
	r      *requester
	dir    string // the agent's data dir
}

func newFleetEnv(t *testing.T) *fleetEnv {
	t.Helper()
	dir := t.TempDir()
	op, opSecret := brokertest.NewOperator(t, "asker")
	b := brokertest.Start(t, broker.Config{}, op)
	db, err := sqlite.Open(filepath.Join(dir, "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{Store: db, Broker: b, LocalAccounts: []broker.Account{op},
		ArtifactDir: filepath.Join(dir, "artifacts"), ValidateSkill: validateSkill, Logger: brokertest.Logger(t),
		Tick: 50 * time.Millisecond, RepublishAge: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.Start(httpapi.Config{Listen: "127.0.0.1:0", Fleet: ctl, Token: "operator-token", VerifyDevice: ctl.VerifyDevice})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close(context.Background())
		ctl.Close()
		db.Close()
	})
	_, creds, err := ctl.AddDevice(context.Background(), "test", "pi-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := creds.PrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	e := &fleetEnv{b: b, ctl: ctl, dir: skillusertest.OpenDir(t), artDir: filepath.Join(dir, "artifacts")}
	e.obs = brokertest.MustConnect(t, b.Addr(), op.Username, opSecret, brokertest.ConnectOptions{ClientID: "obs"})
	e.obs.Sub(t, "chorus/v1/pi-1/skills")
	e.r = newRequester(t, b, op.Username, opSecret, "pi-1")
	cfg := Config{
		Device: "pi-1", MQTTURL: "mqtt://" + b.Addr(), Username: creds.Username, Password: creds.Password,
		Key: key, KeyVersion: creds.KeyVersion, ServerURL: srv.URL(), DataDir: e.dir,
		Skills: testSkills(t), Connectivity: configs.Connectivity{CheckInterval: 60},
		WillDelay: time.Second, Version: "test", Logger: brokertest.Logger(t),
	}
	cfg.Skills.Installer.AllowPip = true
	a, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return e
}

func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description, Requirements: s.Requirements}, nil
}

// publish packs a skill that stays up once started and publishes it; it
// returns the artifact's sha256.
func (e *fleetEnv) publish(t *testing.T, id, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+id+"\ndescription: A test skill.\nversion: "+version+"\nexec: run.sh\nready: on-start\n---\nA test skill.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755)
	var buf bytes.Buffer
	if _, err := artifact.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	v, err := e.ctl.PublishSkill(context.Background(), "test", &buf)
	if err != nil {
		t.Fatal(err)
	}
	return v.SHA256
}

type reportedSkill struct {
	ID, State, Version string
	Managed            bool
}

// skillsUntil reads pi-1's skills reports until ok holds for one.
func (e *fleetEnv) skillsUntil(t *testing.T, what string, ok func(map[string]reportedSkill) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		m, got := e.obs.Next(time.Until(deadline))
		if !got {
			break
		}
		var rep struct{ Skills []reportedSkill }
		if err := json.Unmarshal(m.Payload, &rep); err != nil {
			t.Fatal(err)
		}
		byID := map[string]reportedSkill{}
		for _, s := range rep.Skills {
			byID[s.ID] = s
		}
		if ok(byID) {
			return
		}
	}
	t.Fatalf("no skills report with %s within %s", what, wait)
}

// The whole path: the agent asks the gateway, the controller puts the
// device assignment and publishes the desired document, the installer
// applies it, and only then the request is answered .complete; the skill
// is loaded and fleet-managed, so the reconciler keeps it. Uninstall takes
// it away the same way. An unknown skill fails validation.
func TestInstallRequestThroughGateway(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.publish(t, "hello.test", "1.0.0")

	corr := e.r.send(t, "ovos.pip.install", map[string]any{"packages": []any{"nope.x"}})
	got := e.r.answerTo(t, corr, wait)
	detail, _ := got.data["detail"].(string)
	if got.typ != "ovos.pip.install.failed" || got.data["error"] != "skill url validation failed" || !strings.Contains(detail, "nope.x") {
		t.Fatalf("unknown package: %s %v", got.typ, got.data)
	}

	corr = e.r.send(t, "ovos.pip.install", map[string]any{"packages": []any{"hello.test@1.0.0"}, "service_name": ServiceName})
	got = e.r.answerTo(t, corr, wait)
	if got.typ != "ovos.pip.install.complete" || len(got.data) != 0 {
		t.Fatalf("install: %s %v", got.typ, got.data)
	}
	// .complete comes once the installer applied the document: the skill is in place.
	if _, err := os.Stat(filepath.Join(e.dir, installedDir, "hello.test", "SKILL.md")); err != nil {
		t.Fatalf("install answered complete before the skill was installed: %v", err)
	}
	want, err := e.ctl.DesiredOf(context.Background(), "pi-1")
	if err != nil || want.Skills["hello.test"].Version != "1.0.0" {
		t.Fatalf("desired after install: %+v %v", want, err)
	}
	e.skillsUntil(t, "hello.test loaded and managed", func(s map[string]reportedSkill) bool {
		return s["hello.test"].State == "loaded" && s["hello.test"].Managed
	})

	corr = e.r.send(t, "ovos.skills.uninstall", map[string]any{"packages": []any{"hello.test"}})
	got = e.r.answerTo(t, corr, wait)
	if got.typ != "ovos.skills.uninstall.complete" || len(got.data) != 0 {
		t.Fatalf("uninstall: %s %v", got.typ, got.data)
	}
	if _, err := os.Stat(filepath.Join(e.dir, installedDir, "hello.test")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall answered complete with the skill still installed: %v", err)
	}
	// The manager drops the entry at its next scan; until then it is no
	// longer loaded nor managed.
	e.skillsUntil(t, "hello.test unloaded", func(s map[string]reportedSkill) bool {
		sk, present := s["hello.test"]
		return !present || (sk.State != "loaded" && !sk.Managed)
	})
	if want, err := e.ctl.DesiredOf(context.Background(), "pi-1"); err != nil || len(want.Skills) != 0 {
		t.Fatalf("desired after uninstall: %+v %v", want, err)
	}
}

// The gateway accepts the request but the installer cannot apply the
// document (the artifact is gone from the gateway's store): the request
// fails with the install error and the installer's reason, at once rather
// than at the end of the wait.
func TestInstallRequestApplyFails(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	sum := e.publish(t, "hello.test", "1.0.0")
	if err := os.Remove(filepath.Join(e.artDir, sum)); err != nil {
		t.Fatal(err)
	}
	corr := e.r.send(t, "ovos.pip.install", map[string]any{"packages": []any{"hello.test"}})
	got := e.r.answerTo(t, corr, wait)
	detail, _ := got.data["detail"].(string)
	if got.typ != "ovos.pip.install.failed" || got.data["error"] != "error in pip subprocess" || !strings.Contains(detail, "hello.test") {
		t.Fatalf("answer %s %v, want failed with the install error", got.typ, got.data)
	}
	t.Logf("detail: %s", detail)
}
