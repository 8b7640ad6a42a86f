package fleetclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/gateway/artifact"
)

// The contract test: the real store, controller and HTTP API in process,
// driven by the real client. Every exported call of *fleetclient.Client is
// made (TestContract fails on one it did not drive), and every endpoint of
// docs/api.md is requested (TestContract fails on one it did not reach).

// recorder is the client's transport: it notes each request's method and
// path, so the test can check docs/api.md's endpoints against what was sent.
type recorder struct {
	mu   sync.Mutex
	seen []string // "METHOD /path"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description, Requirements: s.Requirements}, nil
}

func skillArchive(t *testing.T, name, version string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("---\nname: %s\ndescription: Says hello.\nversion: %s\nexec: run.sh\nrequirements: internet\n---\n", name, version)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644)
	var buf bytes.Buffer
	if _, err := artifact.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// contract drives the client and notes which calls it made.
type contract struct {
	t      *testing.T
	ctx    context.Context
	c      *fleetclient.Client
	rec    *recorder
	base   string
	driven map[string]bool
}

// call notes that method was driven and fails the test on err.
func (k *contract) call(method string, err error) {
	k.t.Helper()
	k.driven[method] = true
	if err != nil {
		k.t.Fatalf("%s: %v", method, err)
	}
}

// device makes a request with a device's Basic auth (artifacts, device
// requests: the agent's endpoints, which fleetclient does not call) or none.
func (k *contract) device(method, path, user, pass string, body any) (*http.Response, []byte) {
	k.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(k.ctx, method, k.base+path, rd)
	if err != nil {
		k.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := (&http.Client{Transport: k.rec}).Do(req)
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestContract(t *testing.T) {
	t.Parallel()
	g := gatewaydtest.Start(t, gatewayd.Config{ValidateSkill: validateSkill, Version: "contract"})
	rec := &recorder{}
	base := g.Up().HTTPURL
	c, err := fleetclient.New(fleetclient.Config{BaseURL: base, Token: g.Token(), HTTPClient: &http.Client{Transport: rec, Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k := &contract{t: t, ctx: ctx, c: c, rec: rec, base: base, driven: map[string]bool{"BaseURL": true}}

	k.health()
	pass := k.devices()
	k.access()
	k.enrolment()
	hello := k.skills()
	k.deviceEndpoints(hello, pass)
	k.rollouts(hello)
	k.routesAndGrants()
	k.exports()
	k.audit()
	k.errors()

	for i := range reflect.TypeOf(c).NumMethod() {
		if m := reflect.TypeOf(c).Method(i).Name; !k.driven[m] {
			t.Errorf("fleetclient.Client.%s is not driven by the contract test", m)
		}
	}
	for _, e := range docEndpoints(t) {
		if !slices.ContainsFunc(rec.requests(), e.matches) {
			t.Errorf("docs/api.md endpoint %s was never requested", e)
		}
	}
}

func (k *contract) health() {
	t := k.t
	h, err := k.c.Health(k.ctx)
	k.call("Health", err)
	if h.Status != "ok" || h.Version != "contract" || h.MQTT == nil || h.MQTT.Clients == nil {
		t.Errorf("health = %+v", h)
	}
	resp, b := k.device("GET", "/metrics", "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "chorus_devices") {
		t.Errorf("metrics: %d %.200s", resp.StatusCode, b)
	}
}

// devices enrols pi-1 (kitchen) and pi-2 and returns pi-1's secret.
func (k *contract) devices() (pass string) {
	t, c, ctx := k.t, k.c, k.ctx
	en, err := c.AddDevice(ctx, "pi-1", []string{"kitchen"})
	k.call("AddDevice", err)
	if en.Device.ID != "pi-1" || !slices.Equal(en.Device.Tags, []string{"kitchen"}) || en.Credentials.Device != "pi-1" ||
		en.Credentials.Password == "" || en.Credentials.SkillKey == "" || en.Device.CreatedAt.IsZero() {
		t.Fatalf("AddDevice = %+v", en)
	}
	if _, err := en.Credentials.PrivateKey(); err != nil {
		t.Errorf("AddDevice: the skill key is not a key: %v", err)
	}
	if _, err := c.AddDevice(ctx, "pi-2", nil); err != nil {
		t.Fatal(err)
	}
	ds, err := c.Devices(ctx, fleet.DeviceFilter{Tag: "kitchen"})
	k.call("Devices", err)
	if len(ds) != 1 || ds[0].ID != "pi-1" || ds[0].Online || string(ds[0].Connectivity) != "{}" {
		t.Errorf("Devices(kitchen) = %+v", ds)
	}
	for _, online := range []bool{false, true} { // neither has connected
		got, err := c.Devices(ctx, fleet.DeviceFilter{Online: &online})
		if want := map[bool]int{false: 2, true: 0}[online]; err != nil || len(got) != want {
			t.Errorf("Devices(online=%v) = %d devices, %v; want %d", online, len(got), err, want)
		}
	}
	if _, ok := ds[0].ParseConnectivity(); ok {
		t.Error("connectivity reported before the device said anything")
	}
	d, err := c.SetTags(ctx, "pi-2", []string{"hall", "kitchen"})
	k.call("SetTags", err)
	if !slices.Equal(d.Tags, []string{"hall", "kitchen"}) {
		t.Errorf("SetTags = %+v", d.Tags)
	}
	d, err = c.Device(ctx, "pi-2")
	k.call("Device", err)
	if d.ID != "pi-2" || !slices.Equal(d.Tags, []string{"hall", "kitchen"}) {
		t.Errorf("Device = %+v", d)
	}
	rot, err := c.RotateDevice(ctx, "pi-2")
	k.call("RotateDevice", err)
	if rot.Device.ID != "pi-2" || rot.Credentials.Password == "" || rot.Credentials.KeyVersion < 1 {
		t.Errorf("RotateDevice = %+v", rot)
	}
	return en.Credentials.Password
}

func (k *contract) access() {
	t, c, ctx := k.t, k.c, k.ctx
	ia, err := c.AddIntegration(ctx, "ha", []string{"speak"})
	k.call("AddIntegration", err)
	if ia.Integration.Name != "ha" || !slices.Equal(ia.Integration.Allow, []string{"speak"}) ||
		ia.Credentials.Username != "integration:ha" || ia.Credentials.Password == "" {
		t.Errorf("AddIntegration = %+v", ia)
	}
	is, err := c.Integrations(ctx)
	k.call("Integrations", err)
	if len(is) != 1 || is[0].Name != "ha" || is[0].CreatedAt.IsZero() {
		t.Errorf("Integrations = %+v", is)
	}
	k.call("RemoveIntegration", c.RemoveIntegration(ctx, "ha"))
	oa, err := c.AddOperator(ctx, "alice")
	k.call("AddOperator", err)
	if oa.Operator.Name != "alice" || oa.Credentials.Username != "operator:alice" || oa.Credentials.Password == "" {
		t.Errorf("AddOperator = %+v", oa)
	}
	os, err := c.Operators(ctx)
	k.call("Operators", err)
	if len(os) != 1 || os[0].Name != "alice" {
		t.Errorf("Operators = %+v", os)
	}
	k.call("RemoveOperator", c.RemoveOperator(ctx, "alice"))
	if is, _ := c.Integrations(ctx); len(is) != 0 {
		t.Errorf("after remove: integrations %+v", is)
	}
}

// enrolment drives join tokens: create, list, join (pending, with a client
// that has no operator token), poll, pending list, accept, collect, reject
// and revoke.
func (k *contract) enrolment() {
	t, c, ctx := k.t, k.c, k.ctx
	created, err := c.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Tags: []string{"hall"}, Uses: 2, TTLSeconds: 600})
	k.call("CreateJoinToken", err)
	tok, perr := api.ParseJoinToken(created.Text)
	if perr != nil || tok.URL != k.base || tok.ID != created.Token.ID || created.Token.Uses != 2 || created.Token.Approve ||
		!slices.Equal(created.Token.Tags, []string{"hall"}) || created.Token.ExpiresAt.IsZero() {
		t.Fatalf("CreateJoinToken = %+v (text %v)", created, perr)
	}
	ts, err := c.JoinTokens(ctx)
	k.call("JoinTokens", err)
	if len(ts) != 1 || ts[0].ID != tok.ID || ts[0].Used != 0 {
		t.Errorf("JoinTokens = %+v", ts)
	}
	anon, err := fleetclient.New(fleetclient.Config{BaseURL: k.base, HTTPClient: &http.Client{Transport: k.rec}})
	if err != nil {
		t.Fatal(err)
	}
	jr, err := anon.Join(ctx, api.JoinRequest{Token: tok.ID, Secret: tok.Secret, Device: "pi-j"})
	k.call("Join", err)
	if jr.Status != api.JoinPending || jr.Pending == nil || jr.Credentials != nil {
		t.Fatalf("Join = %+v", jr)
	}
	pr, err := anon.PollJoin(ctx, *jr.Pending)
	k.call("PollJoin", err)
	if pr.Status != api.JoinPending {
		t.Errorf("PollJoin while pending = %+v", pr)
	}
	ps, err := c.PendingDevices(ctx)
	k.call("PendingDevices", err)
	if len(ps) != 1 || ps[0].ID != jr.Pending.ID || ps[0].DeviceID != "pi-j" || ps[0].TokenID != tok.ID || ps[0].Accepted {
		t.Errorf("PendingDevices = %+v", ps)
	}
	d, err := c.AcceptPending(ctx, jr.Pending.ID)
	k.call("AcceptPending", err)
	if d.ID != "pi-j" || !slices.Equal(d.Tags, []string{"hall"}) {
		t.Errorf("AcceptPending = %+v", d)
	}
	if pr, err = anon.PollJoin(ctx, *jr.Pending); err != nil || pr.Status != api.JoinAccepted || pr.Credentials == nil || pr.Credentials.Device != "pi-j" {
		t.Errorf("PollJoin after accept = %+v, %v", pr, err)
	}
	jr2, err := anon.Join(ctx, api.JoinRequest{Token: tok.ID, Secret: tok.Secret, Device: "pi-k"})
	if err != nil {
		t.Fatal(err)
	}
	k.call("RejectPending", c.RejectPending(ctx, jr2.Pending.ID))
	if _, err := anon.PollJoin(ctx, *jr2.Pending); !fleetclient.IsCode(err, api.CodeNotFound) {
		t.Errorf("PollJoin after reject: %v", err)
	}
	rt, err := c.RevokeJoinToken(ctx, tok.ID)
	k.call("RevokeJoinToken", err)
	if rt.ID != tok.ID || rt.RevokedAt.IsZero() || rt.Used != 2 {
		t.Errorf("RevokeJoinToken = %+v", rt)
	}
	if _, err := anon.Join(ctx, api.JoinRequest{Token: tok.ID, Secret: tok.Secret, Device: "pi-l"}); !fleetclient.IsCode(err, api.CodeInvalid) {
		t.Errorf("Join with a revoked token: %v", err)
	}
	k.call("RemoveDevice", c.RemoveDevice(ctx, "pi-j"))
}

// skills publishes hello.chorus 1.0.0 and 1.1.0 and returns 1.1.0.
func (k *contract) skills() fleet.SkillVersion {
	t, c, ctx := k.t, k.c, k.ctx
	archive := skillArchive(t, "hello.chorus", "1.0.0")
	v1, err := c.Publish(ctx, bytes.NewReader(archive))
	k.call("Publish", err)
	sum := sha256.Sum256(archive)
	if v1.SkillID != "hello.chorus" || v1.Version != "1.0.0" || v1.SHA256 != hex.EncodeToString(sum[:]) ||
		v1.Size != int64(len(archive)) || !slices.Equal(v1.Requirements, []string{"internet"}) || v1.Manifest != nil {
		t.Errorf("Publish = %+v", v1)
	}
	v2, err := c.Publish(ctx, bytes.NewReader(skillArchive(t, "hello.chorus", "1.1.0")))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.Skills(ctx)
	k.call("Skills", err)
	if len(ss) != 1 || ss[0].Version != "1.1.0" {
		t.Errorf("Skills = %+v, want the latest of hello.chorus", ss)
	}
	det, err := c.Skill(ctx, "hello.chorus")
	k.call("Skill", err)
	if det.Skill.Version != "1.1.0" || len(det.Versions) != 2 {
		t.Errorf("Skill = %+v", det)
	}
	res, err := c.Search(ctx, "hello", 5)
	k.call("Search", err)
	if len(res) != 1 || res[0].Skill.SkillID != "hello.chorus" || res[0].Score <= 0 {
		t.Errorf("Search = %+v", res)
	}
	r, err := c.Resolve(ctx, "hello")
	k.call("Resolve", err)
	if r.SkillID != "hello.chorus" {
		t.Errorf("Resolve = %+v", r)
	}
	a, err := c.ConfigureSkill(ctx, "hello.chorus", fleet.TagTarget("kitchen"), json.RawMessage(`{"units":"metric"}`))
	k.call("ConfigureSkill", err)
	if a.ID == 0 || a.SkillID != "hello.chorus" || a.Target != fleet.TagTarget("kitchen") || string(a.Settings) != `{"units":"metric"}` {
		t.Errorf("ConfigureSkill = %+v", a)
	}
	return v2
}

// deviceEndpoints drives the agent's two endpoints with pi-1's credentials.
func (k *contract) deviceEndpoints(v fleet.SkillVersion, pass string) {
	t := k.t
	resp, b := k.device("POST", "/v1/device/skills", "pi-1", pass,
		api.DeviceSkillsRequest{Action: fleet.AssignInstall, Packages: []string{"hello.chorus@" + v.Version}})
	var got api.DeviceSkillsResponse
	if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || got.DesiredVersion == 0 || got.Skills["hello.chorus"].SHA256 != v.SHA256 {
		t.Fatalf("device skills: %d %s", resp.StatusCode, b)
	}
	resp, b = k.device("GET", got.Skills["hello.chorus"].URL, "pi-1", pass, nil)
	if sum := sha256.Sum256(b); resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != v.SHA256 {
		t.Errorf("artifact: %d, %d bytes", resp.StatusCode, len(b))
	}
}

func (k *contract) rollouts(v fleet.SkillVersion) {
	t, c, ctx := k.t, k.c, k.ctx
	r, err := c.CreateRollout(ctx, api.RolloutRequest{SkillID: v.SkillID, Version: v.Version, Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("pi-2")},
		Strategy: api.Strategy{Canary: 1, MaxInFlight: 2, FailureThresholdPct: 50, MinExecuted: 1, Timeout: api.Duration(10 * time.Minute),
			Deadline: api.Duration(time.Hour), RatePerMin: 8, RampBasePerMin: 2, RampEvery: api.Duration(30 * time.Second)}})
	k.call("CreateRollout", err)
	want := api.Strategy{Canary: 1, MaxInFlight: 2, FailureThresholdPct: 50, MinExecuted: 1, Timeout: api.Duration(10 * time.Minute),
		Deadline: api.Duration(time.Hour), RatePerMin: 8, RampBasePerMin: 2, RampEvery: api.Duration(30 * time.Second)}
	if r.ID == 0 || r.Action != fleet.RolloutInstall || r.Strategy != want || r.CreatedBy != "operator" || r.Counts.Total() != 1 {
		t.Fatalf("CreateRollout = %+v", r)
	}
	d, err := c.Rollout(ctx, r.ID)
	k.call("Rollout", err)
	if len(d.Executions) != 1 || d.Executions[0].DeviceID != "pi-2" || !d.Executions[0].Canary || d.Executions[0].RolloutID != r.ID {
		t.Errorf("Rollout executions = %+v, want pi-2 as the canary", d.Executions)
	}
	sum, err := c.RolloutSummary(ctx, r.ID)
	k.call("RolloutSummary", err)
	if sum.ID != r.ID || sum.Counts != d.Rollout.Counts || sum.Counts.Queued != 1 {
		t.Errorf("RolloutSummary = %+v, want the counts of %+v", sum, d.Rollout)
	}
	// pi-2 never connected: its execution says so and is blocked, so a
	// wait for what online devices can do is over at once.
	if x := d.Executions[0]; x.State != fleet.ExecQueued || x.Reason != "offline" || !x.Blocked || !d.Settled() {
		t.Errorf("pi-2 offline: %+v, settled %v", x, d.Settled())
	}
	if s, err := c.WaitRollout(ctx, r.ID, fleetclient.WaitOptions{Interval: 10 * time.Millisecond, Until: api.RolloutDetail.Settled}); err != nil ||
		s.Rollout.Terminal() || len(s.Unfinished()) != 1 {
		t.Errorf("WaitRollout until settled = %+v, %v", s, err)
	}
	// Followed by its counts, the rollout stands still; then the answer
	// has the executions and is settled.
	if s, err := c.WaitRollout(ctx, r.ID, fleetclient.WaitOptions{Interval: 10 * time.Millisecond, Until: api.RolloutDetail.Settled,
		ExecutionsWhenStill: true}); err != nil || s.Rollout.Terminal() || len(s.Unfinished()) != 1 {
		t.Errorf("WaitRollout until settled, executions when still = %+v, %v", s, err)
	}
	_, err = c.CreateRollout(ctx, api.RolloutRequest{SkillID: v.SkillID, Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("pi-2")}, Strategy: api.Strategy{RatePerMin: -1}})
	if fe := (*fleetclient.Error)(nil); !errors.As(err, &fe) || fe.Code != api.CodeInvalid || !strings.Contains(fe.Message, "rate -1/min: must not be negative") {
		t.Errorf("negative rate: %v", err)
	}
	p, err := c.PauseRollout(ctx, r.ID)
	k.call("PauseRollout", err)
	if p.State != fleet.RolloutPaused {
		t.Errorf("PauseRollout: %s", p.State)
	}
	rs, err := c.Rollouts(ctx, fleet.RolloutPaused)
	k.call("Rollouts", err)
	if len(rs) != 1 || rs[0].ID != r.ID {
		t.Errorf("Rollouts(paused) = %+v", rs)
	}
	p, err = c.ResumeRollout(ctx, r.ID)
	k.call("ResumeRollout", err)
	if p.State != fleet.RolloutInProgress || p.StartedAt.IsZero() {
		t.Errorf("ResumeRollout = %s, started %v", p.State, p.StartedAt)
	}
	p, err = c.AbortRollout(ctx, r.ID, true)
	k.call("AbortRollout", err)
	if p.State != fleet.RolloutAborted || !p.Terminal() || p.FinishedAt.IsZero() {
		t.Errorf("AbortRollout = %s, finished %v", p.State, p.FinishedAt)
	}
	d, err = c.WaitRollout(ctx, r.ID, fleetclient.WaitOptions{Interval: 10 * time.Millisecond})
	k.call("WaitRollout", err)
	if d.Rollout.State != fleet.RolloutAborted || len(d.Executions) != 1 || d.Executions[0].State != fleet.ExecCanceled {
		t.Errorf("WaitRollout = %+v %+v", d.Rollout, d.Executions)
	}
	if d, err := c.WaitRollout(ctx, r.ID, fleetclient.WaitOptions{Interval: 10 * time.Millisecond, CountsOnly: true}); err != nil ||
		d.Rollout.State != fleet.RolloutAborted || d.Rollout.Counts.Canceled != 1 || d.Executions != nil {
		t.Errorf("WaitRollout, counts only = %+v %+v, %v", d.Rollout, d.Executions, err)
	}
}

func (k *contract) routesAndGrants() {
	t, c, ctx := k.t, k.c, k.ctx
	rt, err := c.PutRoute(ctx, fleet.Route{Satellite: "pi-1", Hub: "pi-2", Allow: []string{"speak"}})
	k.call("PutRoute", err)
	if rt.Satellite != "pi-1" || rt.Hub != "pi-2" || !slices.Equal(rt.Allow, []string{"speak"}) || rt.BlacklistedSkills == nil || rt.CreatedAt.IsZero() {
		t.Errorf("PutRoute = %+v", rt)
	}
	rts, err := c.Routes(ctx)
	k.call("Routes", err)
	if len(rts) != 1 || rts[0].Satellite != "pi-1" {
		t.Errorf("Routes = %+v", rts)
	}
	k.call("RemoveRoute", c.RemoveRoute(ctx, "pi-1"))
	g, err := c.PutSkillGrant(ctx, fleet.SkillGrant{Skill: "hello.chorus", Device: "pi-1", Allow: []string{"ovos.skills.install"}})
	k.call("PutSkillGrant", err)
	if g.Skill != "hello.chorus" || g.Device != "pi-1" || !slices.Equal(g.Allow, []string{"ovos.skills.install"}) {
		t.Errorf("PutSkillGrant = %+v", g)
	}
	gs, err := c.SkillGrants(ctx)
	k.call("SkillGrants", err)
	if len(gs) != 1 || gs[0].Device != "pi-1" {
		t.Errorf("SkillGrants = %+v", gs)
	}
	k.call("RemoveSkillGrant", c.RemoveSkillGrant(ctx, "hello.chorus", "pi-1"))
	if gs, _ := c.SkillGrants(ctx); len(gs) != 0 {
		t.Errorf("after remove: grants %+v", gs)
	}
}

// exports: the Mosquitto files hold pi-1, enrolled through the API (its
// hash recorded when its secret was issued), and hello.chorus's skill
// account, which pi-1 asked for.
func (k *contract) exports() {
	t, c, ctx := k.t, k.c, k.ctx
	ex, err := c.ExportMosquitto(ctx)
	k.call("ExportMosquitto", err)
	if !strings.Contains(ex.PasswordFile, "pi-1:$7$") || !strings.Contains(ex.ACLFile, "pi-1") || ex.Skipped == nil {
		t.Errorf("ExportMosquitto = %+v", ex)
	}
	ds, err := c.ExportMosquittoDynSec(ctx)
	k.call("ExportMosquittoDynSec", err)
	if !json.Valid(ds.DynamicSecurity) || !strings.Contains(string(ds.DynamicSecurity), `"skill:pi-1:hello.chorus"`) {
		t.Errorf("ExportMosquittoDynSec = %.300s (skipped %v)", ds.DynamicSecurity, ds.Skipped)
	}
}

func (k *contract) audit() {
	t, c, ctx := k.t, k.c, k.ctx
	k.call("RemoveDevice", c.RemoveDevice(ctx, "pi-2"))
	es, err := c.Audit(ctx, 100, "device/pi-2")
	k.call("Audit", err)
	var actions []string
	for _, e := range es {
		actions = append(actions, e.Action)
	}
	for _, want := range []string{"device.add", "device.tag", "device.rotate", "device.remove"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit of device/pi-2 = %q, want %s", actions, want)
		}
	}
}

// errors: the API's errors come back as *fleetclient.Error with the code
// and message of docs/api.md.
func (k *contract) errors() {
	t, c, ctx := k.t, k.c, k.ctx
	_, err := c.Device(ctx, "nope")
	var e *fleetclient.Error
	if !fleetclient.IsCode(err, api.CodeNotFound) || !asError(err, &e) || e.Status != 404 || !strings.Contains(e.Message, "nope") {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := c.AddDevice(ctx, "pi-1", nil); !fleetclient.IsCode(err, api.CodeConflict) {
		t.Errorf("existing device: %v", err)
	}
	if _, err := c.AddDevice(ctx, "bad id", nil); !fleetclient.IsCode(err, api.CodeInvalid) {
		t.Errorf("bad id: %v", err)
	}
	wrong, _ := fleetclient.New(fleetclient.Config{BaseURL: k.base, Token: "wrong", HTTPClient: &http.Client{Transport: k.rec}})
	if _, err := wrong.Devices(ctx, fleet.DeviceFilter{}); !fleetclient.IsCode(err, api.CodeUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
}

func asError(err error, target **fleetclient.Error) bool {
	e, ok := err.(*fleetclient.Error)
	*target = e
	return ok
}

// endpoint is one row of docs/api.md: a method and a path pattern whose
// {name} segments match any one segment.
type endpoint struct {
	method string
	path   *regexp.Regexp
	text   string
}

func (e endpoint) String() string { return e.method + " " + e.text }

func (e endpoint) matches(req string) bool {
	m, p, _ := strings.Cut(req, " ")
	return m == e.method && e.path.MatchString(p)
}

// docEndpoints reads every "METHOD /path" of docs/api.md; "`POST /x/pause`
// / `resume` / `abort`" stands for three.
func docEndpoints(t *testing.T) []endpoint {
	t.Helper()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("`(GET|POST|PUT|DELETE) (/[^`\\s\\[?]*)")
	var out []endpoint
	for _, line := range strings.Split(string(doc), "\n") {
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			paths := []string{m[2]}
			if base, ok := strings.CutSuffix(m[2], "/pause"); ok && strings.Contains(line, "`resume`") {
				paths = append(paths, base+"/resume", base+"/abort")
			}
			for _, p := range paths {
				pat := regexp.MustCompile(`\\\{[a-z0-9_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`)
				out = append(out, endpoint{method: m[1], path: regexp.MustCompile("^" + pat + "$"), text: p})
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("docs/api.md: found only %d endpoints: %v", len(out), out)
	}
	return out
}
