package controller_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/bridge"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// fakeClock is the relay's clock in the grace tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newBridgeEnv is a gateway under test (real broker, real SQLite, the
// controller with its relay) with bridge settings b.
func newBridgeEnv(t *testing.T, b controller.Bridge) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.b = brokertest.Start(t, broker.Config{})
	e.dbPath = filepath.Join(e.dir, "fleet.db")
	db, err := sqlite.Open(e.dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{
		Store: db, Broker: e.b, ArtifactDir: filepath.Join(e.dir, "artifacts"), ValidateSkill: validateSkill,
		MQTTURL: e.b.URL(), Logger: brokertest.Logger(t), Tick: 50 * time.Millisecond, Bridge: b,
		HomeAssistant: controller.HomeAssistant{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.db, e.ctl = db, ctl
	t.Cleanup(e.stop)
	return e
}

// peer is a simulated agent: a device's own MQTT connection reading its bus.
type peer struct {
	t  *testing.T
	id string
	c  *brokertest.Client
}

func (e *env) peer(id string) *peer {
	e.t.Helper()
	creds := e.addDevice(id)
	p := &peer{t: e.t, id: id}
	p.c = brokertest.MustConnect(e.t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: id, CleanStart: true})
	p.c.Sub(e.t, "chorus/v1/"+id+"/bus/+")
	p.availability("online")
	return p
}

func (p *peer) retained(suffix string, payload []byte) {
	p.t.Helper()
	if rc := p.c.Pub(p.t, "chorus/v1/"+p.id+"/"+suffix, payload, true); rc != 0 {
		p.t.Fatalf("%s: publish %s: reason 0x%02x", p.id, suffix, rc)
	}
}

func (p *peer) availability(state string) { p.retained("availability", []byte(state)) }

func (p *peer) skills(loaded ...string) {
	var list []map[string]any
	for _, s := range loaded {
		list = append(list, map[string]any{"id": s, "version": "1.0.0", "state": "loaded"})
	}
	b, _ := json.Marshal(map[string]any{"applied_version": 0, "skills": list})
	p.retained("skills", b)
}

// emit publishes a message on the peer's own bus. The broker acknowledges a
// QoS 1 publish before it hands it on (mochi's processPublish writes the
// PUBACK first), so when emit returns the relay may not have the message
// yet: the peer's own messages reach it in order, but ordering them before
// another peer's takes syncVia or fence.
func (p *peer) emit(raw string) {
	p.t.Helper()
	m, err := envelope.Decode([]byte(raw))
	if err != nil {
		p.t.Fatal(err)
	}
	b, _ := envelope.Encode(m)
	if rc := p.c.Pub(p.t, "chorus/v1/"+p.id+"/bus/"+m.Type, b, false); rc != 0 {
		p.t.Fatalf("%s: emit %s: reason 0x%02x", p.id, m.Type, rc)
	}
}

// next returns the next bus message the peer receives, skipping the ones of
// skipTypes ("*": all) it emitted itself (its own publishes come back on
// its subscription), or fails.
func (p *peer) next(skipTypes ...string) envelope.Message {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		pk, ok := p.c.Next(time.Until(deadline))
		if !ok {
			p.t.Fatalf("%s: no bus message within %s", p.id, waitFor)
		}
		m, err := envelope.Decode(pk.Payload)
		if err != nil {
			p.t.Fatalf("%s: bad message on %s: %v", p.id, pk.Topic, err)
		}
		if !fromRelay(pk) && (contains(skipTypes, m.Type) || contains(skipTypes, "*")) {
			continue
		}
		return m
	}
}

// fence returns once the relay has been handed everything p published
// before it: the broker reads a client's packets one at a time and hands
// each on before it reads the next, so the acknowledgement of a later
// publish follows the hand-over of every earlier one. The fence message has
// no destination and p is not a satellite, so the relay drops it.
func (p *peer) fence() {
	p.t.Helper()
	p.emit(`{"type":"chorus.test.fence","data":{}}`)
}

// syncVia makes sure the relay has handled everything sat published so far:
// the broker acknowledges a publish before it hands it on, so only a round
// trip through the relay orders sat's messages before another peer's.
func syncVia(sat, hub *peer) {
	sat.t.Helper()
	sat.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["sync"]}}`)
	if m := hub.next("*"); m.Type != "ovos.utterance.handle" || m.Source() != bridge.ParticipantID(sat.id) {
		sat.t.Fatalf("sync: hub got %s from %s", m.Type, m.Source())
	}
}

func fromRelay(pk *paho.Publish) bool {
	return pk.Properties != nil && pk.Properties.User.Get("chorus-relay") == "1"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ctxJSON(t *testing.T, m envelope.Message, key string) string {
	t.Helper()
	b, _ := json.Marshal(m.Context[key])
	return string(b)
}

func TestBridgeUtteranceAndReply(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{})
	hub, sat, other := e.peer("hub"), e.peer("pi-kitchen"), e.peer("pi-bedroom")
	for _, s := range []string{"pi-kitchen", "pi-bedroom"} {
		if _, err := e.ctl.PutRoute(context.Background(), "test", &fleet.Route{Satellite: s, Hub: "hub"}); err != nil {
			t.Fatal(err)
		}
	}
	// A forged source and the satellite's "default" session.
	sat.emit(`{"type":"recognizer_loop:utterance","data":{"utterances":["hello"]},"context":{"source":"chorus:pi-bedroom","session":{"session_id":"default"}}}`)
	in := hub.next("*")
	if in.Type != "recognizer_loop:utterance" || in.Source() != "chorus:pi-kitchen" || in.SessionID() != "chorus-pi-kitchen" ||
		strings.Join(in.Destination(), ",") != "skills" {
		t.Fatalf("hub got %s source %q session %q destination %v", in.Type, in.Source(), in.SessionID(), in.Destination())
	}

	// The hub's broadcast is not relayed; its reply (MSG-1 §5.2) is, to
	// pi-kitchen only. The reply is the barrier: were the broadcast relayed,
	// it would arrive first.
	hub.emit(`{"type":"speak","data":{"utterance":"to everyone"},"context":{"session":{"session_id":"chorus-pi-kitchen"}}}`)
	reply := in.Reply("speak", map[string]any{"utterance": "Hello!"})
	b, _ := envelope.Encode(reply)
	hub.emit(string(b))
	got := sat.next("*")
	if got.Data["utterance"] != "Hello!" || got.SessionID() != "default" || strings.Join(got.Destination(), ",") != "chorus:pi-kitchen" {
		t.Fatalf("satellite got %s %v session %q", got.Type, got.Data, got.SessionID())
	}
	hub.emit(`{"type":"speak","data":{"utterance":"barrier"},"context":{"destination":"chorus:pi-bedroom","session":{"session_id":"chorus-pi-bedroom"}}}`)
	if m := other.next("*"); m.Data["utterance"] != "barrier" {
		t.Fatalf("pi-bedroom got %s %v before its barrier", m.Type, m.Data)
	}

	// A converse ping is not relayed to a satellite hosting no skills...
	ping := `{"type":"ovos.converse.ping","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`
	hub.emit(ping)
	hub.emit(`{"type":"speak","data":{"utterance":"barrier 2"},"context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`)
	if m := sat.next("*"); m.Type != "speak" || m.Data["utterance"] != "barrier 2" {
		t.Fatalf("satellite without skills got %s %v", m.Type, m.Data)
	}
	// ...but is to one that hosts skills.
	sat.skills("timer.skill")
	syncVia(sat, hub)
	hub.emit(ping)
	if m := sat.next("*"); m.Type != "ovos.converse.ping" || m.SessionID() != "default" {
		t.Fatalf("satellite hosting skills got %s session %q", m.Type, m.SessionID())
	}
}

func TestBridgePolicyChangesMidConversation(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{})
	hub, sat := e.peer("hub"), e.peer("pi-kitchen")
	ctx := context.Background()
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	sat.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["one"]}}`)
	if m := hub.next("*"); ctxJSON(t, m, "session") != `{"session_id":"chorus-pi-kitchen"}` {
		t.Fatalf("first session = %s", ctxJSON(t, m, "session"))
	}
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub",
		BlacklistedSkills: []string{"music.skill"}, BlacklistedIntents: []string{"timer.skill:set"}}); err != nil {
		t.Fatal(err)
	}
	// The satellite's session still says nothing of the policy.
	sat.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["two"]},"context":{"session":{"session_id":"default","blacklisted_skills":[]}}}`)
	want := `{"blacklisted_intents":["timer.skill:set"],"blacklisted_skills":["music.skill"],"session_id":"chorus-pi-kitchen"}`
	if m := hub.next("*"); ctxJSON(t, m, "session") != want {
		t.Fatalf("second session = %s, want %s", ctxJSON(t, m, "session"), want)
	}
	// Allowed types change too: now only speak crosses.
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub", Allow: []string{"speak"}}); err != nil {
		t.Fatal(err)
	}
	sat.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["three"]}}`)
	sat.emit(`{"type":"speak","data":{"utterance":"barrier"}}`)
	if m := hub.next("*"); m.Type != "speak" || m.Data["utterance"] != "barrier" {
		t.Fatalf("hub got %s %v, want the barrier", m.Type, m.Data)
	}
}

func TestBridgeOfflinePastGrace(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	e := newBridgeEnv(t, controller.Bridge{Grace: 30 * time.Second, Now: clock.Now, Tick: time.Hour})
	hub, sat := e.peer("hub"), e.peer("pi-kitchen")
	if _, err := e.ctl.PutRoute(context.Background(), "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	say := func(what string) {
		hub.emit(`{"type":"speak","data":{"utterance":"` + what + `"},"context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`)
	}
	// Offline within the grace period: held, delivered on return, in order.
	sat.availability("offline")
	syncVia(sat, hub)
	say("held 1")
	say("held 2")
	clock.Add(10 * time.Second)
	sat.availability("online")
	syncVia(sat, hub)
	for _, want := range []string{"held 1", "held 2"} {
		if m := sat.next("*"); m.Data["utterance"] != want {
			t.Fatalf("got %v, want %s", m.Data, want)
		}
	}
	// Offline past the grace period: nothing stale arrives.
	sat.availability("offline")
	syncVia(sat, hub)
	say("stale")
	clock.Add(31 * time.Second)
	say("staler")
	hub.fence() // else the satellite's return may reach the relay before "staler"
	sat.availability("online")
	syncVia(sat, hub)
	say("fresh")
	if m := sat.next("*"); m.Data["utterance"] != "fresh" {
		t.Fatalf("satellite back after the grace period got %v first", m.Data)
	}
	if s := e.ctl.RelayStats(); s.Discarded != 2 {
		t.Errorf("discarded = %d, want 2", s.Discarded)
	}
}

func TestBridgeDeparture(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{Twins: "both"})
	hub, sat := e.peer("hub"), e.peer("pi-kitchen")
	ctx := context.Background()
	sat.skills("timer.skill")
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	syncVia(sat, hub)
	if err := e.ctl.RemoveRoute(ctx, "test", "pi-kitchen"); err != nil {
		t.Fatal(err)
	}
	m := hub.next("*")
	if m.Type == "recognizer_loop:utterance" { // the sync's twin
		m = hub.next("*")
	}
	if m.Type != bridge.TypeSkillDeregister || m.Data["skill_id"] != "timer.skill" || m.SessionID() != "chorus-pi-kitchen" {
		t.Fatalf("hub got %s %v session %q", m.Type, m.Data, m.SessionID())
	}
	// Its twin is a safe self-deregistration (seeds/001 §5.7).
	if tw := hub.next("*"); tw.Type != "detach_skill" || tw.Context[bridge.KeyTwin] != true {
		t.Fatalf("hub got %s, want the detach_skill twin", tw.Type)
	}
	// Device removal is a departure too.
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	if err := e.ctl.RemoveDevice(ctx, "test", "pi-kitchen"); err != nil {
		t.Fatal(err)
	}
	if m := hub.next("*"); m.Type != bridge.TypeSkillDeregister || m.Data["skill_id"] != "timer.skill" {
		t.Fatalf("after device removal hub got %s %v", m.Type, m.Data)
	}
}

// The controller may clear a removed device's retained skills before the
// route's end reaches the relay (an availability for the unknown device is
// cleared at once). The departure still deregisters the skills the
// satellite hosted last.
func TestBridgeDepartureAfterSkillsCleared(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{})
	hub, sat := e.peer("hub"), e.peer("pi-kitchen")
	ctx := context.Background()
	sat.skills("timer.skill")
	if _, err := e.ctl.PutRoute(ctx, "test", &fleet.Route{Satellite: "pi-kitchen", Hub: "hub"}); err != nil {
		t.Fatal(err)
	}
	syncVia(sat, hub)
	sat.retained("skills", nil) // cleared, as clearTopics does
	syncVia(sat, hub)
	if err := e.ctl.RemoveRoute(ctx, "test", "pi-kitchen"); err != nil {
		t.Fatal(err)
	}
	if m := hub.next("*"); m.Type != bridge.TypeSkillDeregister || m.Data["skill_id"] != "timer.skill" {
		t.Fatalf("hub got %s %v, want the deregistration of timer.skill", m.Type, m.Data)
	}
}

func TestBridgeFloodRateLimited(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{Rate: 0.001, Burst: 3})
	hub, sat, other := e.peer("hub"), e.peer("pi-kitchen"), e.peer("pi-bedroom")
	for _, s := range []string{"pi-kitchen", "pi-bedroom"} {
		if _, err := e.ctl.PutRoute(context.Background(), "test", &fleet.Route{Satellite: s, Hub: "hub"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		sat.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["flood"]}}`)
	}
	poll.Until(t, "the flood handled", waitFor, func() bool { return e.ctl.RelayStats().RateLimited == 17 })
	for i := range 3 {
		if m := hub.next("*"); m.Source() != "chorus:pi-kitchen" {
			t.Fatalf("message %d from %s, want pi-kitchen", i, m.Source())
		}
	}
	other.emit(`{"type":"ovos.utterance.handle","data":{"utterances":["barrier"]}}`)
	if m := hub.next("*"); m.Source() != "chorus:pi-bedroom" {
		t.Fatalf("the 4th message is from %s, want the barrier", m.Source())
	}
}

// TestBridgeTwinsOnTheBus publishes every row's predecessor name on a
// device bus in "both" mode: each is twinned exactly once, and a barrier
// shows nothing else (no twin of a twin, no loop) follows.
func TestBridgeTwinsOnTheBus(t *testing.T) {
	t.Parallel()
	e := newBridgeEnv(t, controller.Bridge{Twins: "both"})
	dev := e.peer("pi-kitchen")
	for _, row := range bridge.TwinTable {
		dev.emit(`{"type":"` + row.Legacy + `","data":{"skill_id":"a.skill"},"context":{"skill_id":"a.skill"}}`)
		if m := dev.next("*"); m.Type != row.V1 || m.Context[bridge.KeyTwin] != true {
			t.Fatalf("%s: got %s, want its twin %s", row.Legacy, m.Type, row.V1)
		}
	}
	for _, row := range bridge.TwinTable {
		dev.emit(`{"type":"` + row.V1 + `","data":{"skill_id":"a.skill","skills":[]},"context":{"skill_id":"a.skill"}}`)
		if m := dev.next("*"); m.Type != row.Legacy || m.Context[bridge.KeyTwin] != true {
			t.Fatalf("%s: got %s, want its twin %s", row.V1, m.Type, row.Legacy)
		}
	}
	// The barrier goes through the relay too: a twin of a twin would be
	// published before the barrier's twin.
	dev.emit(`{"type":"mycroft.awoken","data":{"barrier":true}}`)
	if m := dev.next("*"); m.Type != "ovos.listener.awoken" || m.Data["barrier"] != true {
		t.Fatalf("got %s %v after the last twin, want the barrier's twin", m.Type, m.Data)
	}
}
