//go:build !chorus_agent

package main

// Bridging buses (issue #9, docs/bridging.md) with real parts: one
// `chorus gateway`, a hub and three devices each run by a `chorus agent`
// process, routes made with `chorus fleet route`. OVOS clients are played by
// websocket clients of the agents' drop-in (BUS.md §3); what crosses is
// observed as an operator sees it, on MQTT, where the relay's own publishes
// carry the user property chorus-relay=1.
//
// Ordering is what makes "nothing else crossed" checkable without sleeping:
// the broker hands every publish to the relay (an inline subscriber) before
// any client sees it, and the relay handles its inbox and publishes from one
// goroutine. So once a message sent later (a barrier) has crossed, anything
// sent before it that was going to cross has already been seen.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/bridge"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// bridgeWait bounds every wait of the bridge tests.
const bridgeWait = 20 * time.Second

// seen is one message a test client received.
type seen struct {
	Device  string
	Kind    string // the topic level after the device ("bus", "availability", …); "ws" for a websocket frame
	Type    string // a bus or websocket message's type
	Payload []byte
	Msg     envelope.Message // a bus or websocket message, decoded
	Relayed bool             // published by the gateway's relay
}

// text is the utterance a message carries, if any.
func (s seen) text() string {
	if u, ok := s.Msg.Data["utterance"].(string); ok {
		return u
	}
	if l, ok := s.Msg.Data["utterances"].([]any); ok && len(l) > 0 {
		u, _ := l[0].(string)
		return u
	}
	return ""
}

func (s seen) String() string {
	return s.Device + " " + s.Type + " " + string(s.Payload)
}

// seenLog keeps what one client received, in order.
type seenLog struct {
	mu      sync.Mutex
	list    []seen
	changed chan struct{} // closed and replaced by every add
}

func newSeenLog() *seenLog { return &seenLog{changed: make(chan struct{})} }

func (l *seenLog) add(s seen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, s)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *seenLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.list)
}

func (l *seenLog) slice(from, to int) []seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list[from:min(to, len(l.list))])
}

// waitFor returns the index of the first message at or after from that
// matches, waiting up to bridgeWait for it.
func (l *seenLog) waitFor(t *testing.T, from int, what string, match func(seen) bool) (int, seen) {
	t.Helper()
	deadline := time.NewTimer(bridgeWait)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for ; from < len(l.list); from++ {
			if match(l.list[from]) {
				s := l.list[from]
				l.mu.Unlock()
				return from, s
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s within %s", what, bridgeWait)
		}
	}
}

// recordMQTT logs everything c receives until the test ends.
func recordMQTT(t *testing.T, c *brokertest.Client) *seenLog {
	l := newSeenLog()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if pk, ok := c.Next(50 * time.Millisecond); ok {
				l.add(seenMQTT(pk))
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return l
}

func seenMQTT(pk *paho.Publish) seen {
	s := seen{Payload: pk.Payload, Relayed: pk.Properties != nil && pk.Properties.User.Get("chorus-relay") == "1"}
	parts := strings.SplitN(pk.Topic, "/", 5) // chorus/v1/<device>/<kind>[/<type>]
	if len(parts) >= 4 {
		s.Device, s.Kind = parts[2], parts[3]
	}
	if len(parts) == 5 && s.Kind == "bus" {
		s.Type = parts[4]
		s.Msg, _ = envelope.Decode(pk.Payload)
	}
	return s
}

// wsPeer is an OVOS client of a device's websocket drop-in.
type wsPeer struct {
	conn *websocket.Conn
	log  *seenLog
}

func dialWS(t *testing.T, device, url string) *wsPeer {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("%s websocket: %v", device, err)
	}
	p := &wsPeer{conn: conn, log: newSeenLog()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			m, _ := envelope.Decode(b)
			p.log.add(seen{Device: device, Kind: "ws", Type: m.Type, Payload: b, Msg: m})
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	p.log.waitFor(t, 0, device+" websocket greeting", func(s seen) bool { return s.Type == "connected" })
	return p
}

// send writes one frame, as an OVOS service on the device would.
func (p *wsPeer) send(t *testing.T, m envelope.Message) {
	t.Helper()
	b, err := envelope.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	p.sendRaw(t, string(b))
}

func (p *wsPeer) sendRaw(t *testing.T, frame string) {
	t.Helper()
	if err := p.conn.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// bridgeHome is the gateway, its agents and the observing clients.
type bridgeHome struct {
	work      string
	gateway   *proc
	op        *brokertest.Client
	bus       *seenLog // the operator's view of every device bus
	state     *seenLog // the observer's view of availability, skills and births
	agents    map[string]*proc
	agentArgs map[string][]string
	ws        map[string]*wsPeer
}

// The home of the bridge tests: hub (no skills), pi-kitchen (a satellite
// without skills), pi-office (a satellite hosting hello.chorus) and
// pi-bedroom (in no route, with compat twins on its bus). The grace period
// is shortened to 2 s with the gateway config's bridge.grace.
func startBridgeHome(t *testing.T) *bridgeHome {
	t.Helper()
	work := t.TempDir()
	cfg := `{"bridge": {"grace": 2, "twins_by_device": {"pi-bedroom": "both"}}}`
	if err := os.WriteFile(filepath.Join(work, "chorus.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &bridgeHome{work: work, agents: map[string]*proc{}, ws: map[string]*wsPeer{}}
	h.gateway = startChorus(t, work, "gateway", "--config", "chorus.json", "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, h.gateway, filepath.Join(work, configs.DefaultDataDir))
	addr := mqttAddr(t, up.MQTTURL)
	h.op = brokertest.MustConnect(t, addr, up.Operator.Username, up.Operator.Password, brokertest.ConnectOptions{ClientID: "e2e-operator"})
	if rc := h.op.Sub(t, "chorus/v1/+/bus/+"); rc >= 0x80 {
		t.Fatalf("operator subscribe: reason %#x", rc)
	}
	h.bus = recordMQTT(t, h.op)
	obs := brokertest.MustConnect(t, addr, up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "e2e-observer"})
	for _, f := range []string{"chorus/v1/+/availability", "chorus/v1/+/skills", "chorus/v1/+/birth"} {
		if rc := obs.Sub(t, f); rc >= 0x80 {
			t.Fatalf("observer subscribe %s: reason %#x", f, rc)
		}
	}
	h.state = recordMQTT(t, obs)

	for _, d := range []string{"hub", "pi-kitchen", "pi-office", "pi-bedroom"} {
		mustChorus(t, work, "fleet", "device", "add", d, "--credentials-out", d+".json")
	}
	for _, sat := range []string{"pi-kitchen", "pi-office"} {
		out := mustChorus(t, work, "fleet", "route", "add", sat, "--hub", "hub")
		if want := "route " + sat + " -> hub set (allow: recognizer_loop:utterance,ovos.utterance.handle)"; !strings.Contains(out, want) {
			t.Fatalf("route add %s printed %q, want %q", sat, out, want)
		}
	}

	none, office := filepath.Join(work, "no-skills"), filepath.Join(work, "office-skills")
	os.MkdirAll(none, 0o755)
	os.MkdirAll(office, 0o755)
	copyDir(t, mustAbs(t, "../../configs/skills/hello.chorus"), filepath.Join(office, "hello.chorus"))
	ws := []string{"--ws-listen", "127.0.0.1:0"}
	h.agentArgs = map[string][]string{
		"hub":        append([]string{"--skills", none}, ws...),
		"pi-kitchen": append([]string{"--skills", none}, ws...),
		"pi-office":  {"--skills", office, "--ws-listen", "off"},
		"pi-bedroom": append([]string{"--skills", none}, ws...),
	}
	for _, d := range []string{"hub", "pi-kitchen", "pi-office", "pi-bedroom"} {
		h.startAgent(t, d)
	}
	for _, d := range []string{"hub", "pi-kitchen", "pi-bedroom"} {
		h.waitOnline(t, d, 0)
		h.ws[d] = dialWS(t, d, ovosBusURL(t, h.servicesConfig(d)))
	}
	h.waitOnline(t, "pi-office", 0)
	h.state.waitFor(t, 0, "hello.chorus loaded on pi-office", func(s seen) bool {
		var st skillsTopic
		if s.Device != "pi-office" || s.Kind != "skills" || json.Unmarshal(s.Payload, &st) != nil {
			return false
		}
		return slices.ContainsFunc(st.Skills, func(sk struct{ ID, State, Error string }) bool {
			return sk.ID == "hello.chorus" && sk.State == "loaded"
		})
	})
	return h
}

// startAgent starts device's agent with a config that has it write the
// OVOS services' mycroft.conf (docs/ovos.md), and with a Will delay of 1 s
// (agent.will_delay, its minimum; 5 s by default): a killed agent shows
// offline 1 s after the broker saw its connection drop.
func (h *bridgeHome) startAgent(t *testing.T, device string) {
	t.Helper()
	cfg := fmt.Sprintf(`{"websocket": {"services_config": %q}, "agent": {"will_delay": 1}}`, h.servicesConfig(device))
	if err := os.WriteFile(filepath.Join(h.work, device+"-agent.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"agent", "--config", device + "-agent.json", "--credentials", device + ".json", "--data-dir", device + "-data"}, h.agentArgs[device]...)
	h.agents[device] = startChorus(t, h.work, args...)
}

// servicesConfig is where device's agent writes the OVOS services' mycroft.conf.
func (h *bridgeHome) servicesConfig(device string) string {
	return filepath.Join(h.work, device+"-ovos", "mycroft", "mycroft.conf")
}

func (h *bridgeHome) waitOnline(t *testing.T, device string, from int) {
	t.Helper()
	h.waitAvailability(t, device, "online", from)
}

func (h *bridgeHome) waitAvailability(t *testing.T, device, state string, from int) {
	t.Helper()
	h.state.waitFor(t, from, device+" "+state, func(s seen) bool {
		return s.Device == device && s.Kind == "availability" && string(s.Payload) == state
	})
}

// crossed waits for the relayed message matching match at or after from; it
// returns its index, the message, and what else the relay published since
// from, before it.
func (h *bridgeHome) crossed(t *testing.T, from int, what string, match func(seen) bool) (int, seen, []seen) {
	t.Helper()
	i, s := h.bus.waitFor(t, from, what, func(s seen) bool { return s.Relayed && match(s) })
	var before []seen
	for _, b := range h.bus.slice(from, i) {
		if b.Relayed {
			before = append(before, b)
		}
	}
	return i, s, before
}

// sent waits until the operator sees a message nobody relayed: the relay has
// been offered it (see the top of this file).
func (h *bridgeHome) sent(t *testing.T, from int, device, text string) int {
	t.Helper()
	i, _ := h.bus.waitFor(t, from, device+" sending "+text, func(s seen) bool {
		return !s.Relayed && s.Device == device && s.text() == text
	})
	return i
}

// publishOn publishes a message on a device's bus as `chorus bus send` does
// (operator credentials) and waits until it is seen.
func (h *bridgeHome) publishOn(t *testing.T, device, raw string) {
	t.Helper()
	m, err := envelope.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	from := h.bus.len()
	if rc := h.op.Pub(t, "chorus/v1/"+device+"/bus/"+m.Type, []byte(raw), false); rc != 0 {
		t.Fatalf("publish on %s: reason %#x", device, rc)
	}
	h.bus.waitFor(t, from, "the operator's "+m.Type+" on "+device, func(s seen) bool {
		return !s.Relayed && s.Device == device && string(s.Payload) == raw
	})
}

func relayedText(device, typ, text string) func(seen) bool {
	return func(s seen) bool { return s.Device == device && s.Type == typ && s.text() == text }
}

func relayedType(device, typ string) func(seen) bool {
	return func(s seen) bool { return s.Device == device && s.Type == typ }
}

func sessionJSON(m envelope.Message) string {
	b, _ := json.Marshal(m.Context[envelope.KeySession])
	return string(b)
}

func newMsg(t string, data map[string]any, ctx map[string]any) envelope.Message {
	m := envelope.New(t, data)
	if ctx != nil {
		m.Context = ctx
	}
	return m
}

// needUtterances skips a subtest whose messages are derived from utterances
// an earlier subtest failed to carry across.
func needUtterances(t *testing.T, in ...envelope.Message) {
	t.Helper()
	for _, m := range in {
		if m.Type == "" {
			t.Skip("no utterance crossed to the hub")
		}
	}
}

func killAgent(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-p.waited
	p.waited <- err // for Cleanup
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestBridgeE2E(t *testing.T) {
	t.Parallel()
	h := startBridgeHome(t)
	hub, kitchen, bedroom := h.ws["hub"], h.ws["pi-kitchen"], h.ws["pi-bedroom"]
	// kitchenIn and officeIn are the satellites' utterances as the hub's
	// OVOS services received them; the hub's answers are derived from them.
	var kitchenIn, officeIn envelope.Message

	t.Run("route CLI", func(t *testing.T) { testRouteCLI(t, h) })

	t.Run("utterance crosses stamped and translated", func(t *testing.T) {
		from, hubFrom := h.bus.len(), hub.log.len()
		// As ovos-dinkum-listener sends it: source "audio", the device's "default" session.
		kitchen.sendRaw(t, `{"type":"recognizer_loop:utterance","data":{"utterances":["turn on the light"],"lang":"en-us"},`+
			`"context":{"source":"audio","destination":["skills"],"session":{"session_id":"default","lang":"en-us"}}}`)
		_, in, before := h.crossed(t, from, "the kitchen utterance on the hub", relayedText("hub", "recognizer_loop:utterance", "turn on the light"))
		if len(before) > 0 {
			t.Errorf("relayed before the utterance: %v", before)
		}
		if in.Msg.Source() != "chorus:pi-kitchen" || strings.Join(in.Msg.Destination(), ",") != "skills" ||
			sessionJSON(in.Msg) != `{"lang":"en-us","session_id":"chorus-pi-kitchen"}` {
			t.Fatalf("hub got source %q destination %v session %s", in.Msg.Source(), in.Msg.Destination(), sessionJSON(in.Msg))
		}
		_, ws := hub.log.waitFor(t, hubFrom, "the utterance on the hub's websocket", func(s seen) bool { return s.text() == "turn on the light" })
		kitchenIn = ws.Msg
		if kitchenIn.Source() != "chorus:pi-kitchen" || kitchenIn.SessionID() != "chorus-pi-kitchen" {
			t.Fatalf("the hub's OVOS services got %s", ws.Payload)
		}

		// A forged source is replaced; a named session is translated, not shared.
		from = h.bus.len()
		h.publishOn(t, "pi-office", `{"type":"ovos.utterance.handle","data":{"utterances":["what time is it"]},`+
			`"context":{"source":"chorus:pi-kitchen","session":{"session_id":"morning"}}}`)
		_, in, before = h.crossed(t, from, "the office utterance on the hub", relayedText("hub", "ovos.utterance.handle", "what time is it"))
		if len(before) > 0 {
			t.Errorf("relayed before the utterance: %v", before)
		}
		if in.Msg.Source() != "chorus:pi-office" || in.Msg.SessionID() != "chorus-pi-office:morning" {
			t.Fatalf("hub got source %q session %s", in.Msg.Source(), sessionJSON(in.Msg))
		}
		officeIn = in.Msg
	})

	t.Run("reply reaches only its satellite", func(t *testing.T) {
		needUtterances(t, kitchenIn, officeIn)
		from, wsFrom := h.bus.len(), kitchen.log.len()
		// Broadcasts (no destination), in the satellite's session and in the hub's own.
		hub.send(t, newMsg("speak", map[string]any{"utterance": "good night everyone"}, map[string]any{"session": map[string]any{"session_id": "chorus-pi-kitchen"}}))
		hub.send(t, newMsg("speak", map[string]any{"utterance": "hub only"}, nil))
		hub.send(t, kitchenIn.Reply("speak", map[string]any{"utterance": "The light is on"}))
		hub.send(t, officeIn.Reply("speak", map[string]any{"utterance": "It is noon"}))
		h.sent(t, from, "hub", "good night everyone")
		i, got, before := h.crossed(t, from, "the reply on pi-kitchen", relayedText("pi-kitchen", "speak", "The light is on"))
		if len(before) > 0 {
			t.Errorf("relayed before the reply (a broadcast crossed?): %v", before)
		}
		if got.Msg.Source() != "skills" || strings.Join(got.Msg.Destination(), ",") != "chorus:pi-kitchen" ||
			sessionJSON(got.Msg) != `{"lang":"en-us","session_id":"default"}` {
			t.Fatalf("pi-kitchen got %s", got.Payload)
		}
		// The office's reply is the barrier: between the two, nothing was
		// relayed to anyone (pi-office, pi-bedroom, or pi-kitchen again).
		_, got, before = h.crossed(t, i+1, "the reply on pi-office", relayedText("pi-office", "speak", "It is noon"))
		if len(before) > 0 {
			t.Errorf("relayed between the replies: %v", before)
		}
		if got.Msg.SessionID() != "morning" {
			t.Errorf("pi-office reply session %s, want morning", sessionJSON(got.Msg))
		}
		// The satellite's OVOS audio gets the reply and not the broadcasts.
		j, _ := kitchen.log.waitFor(t, wsFrom, "the reply on the kitchen's websocket", func(s seen) bool { return s.text() == "The light is on" })
		for _, s := range kitchen.log.slice(wsFrom, j) {
			if s.Type == "speak" {
				t.Errorf("the kitchen's websocket got %s", s.Payload)
			}
		}
	})

	t.Run("converse ping only to a satellite hosting skills", func(t *testing.T) {
		needUtterances(t, kitchenIn, officeIn)
		from := h.bus.len()
		hub.send(t, kitchenIn.Reply("ovos.converse.ping", nil))
		hub.send(t, officeIn.Reply("ovos.converse.ping", nil))
		hub.send(t, kitchenIn.Reply("speak", map[string]any{"utterance": "after the pings"}))
		h.bus.waitFor(t, from, "the kitchen's ping on the hub", func(s seen) bool {
			return !s.Relayed && s.Device == "hub" && s.Type == "ovos.converse.ping" && strings.Join(s.Msg.Destination(), ",") == "chorus:pi-kitchen"
		})
		i, ping, before := h.crossed(t, from, "the ping on pi-office", relayedType("pi-office", "ovos.converse.ping"))
		if len(before) > 0 {
			t.Errorf("relayed before the office's ping (to pi-kitchen, which hosts no skill?): %v", before)
		}
		if ping.Msg.SessionID() != "morning" || strings.Join(ping.Msg.Destination(), ",") != "chorus:pi-office" {
			t.Errorf("pi-office ping: %s", ping.Payload)
		}
		if _, _, before = h.crossed(t, i+1, "the barrier on pi-kitchen", relayedText("pi-kitchen", "speak", "after the pings")); len(before) > 0 {
			t.Errorf("relayed before the barrier: %v", before)
		}
	})

	t.Run("default never crosses untranslated", func(t *testing.T) {
		from := h.bus.len()
		kitchen.sendRaw(t, `{"type":"ovos.utterance.handle","data":{"utterances":["no session"]}}`)
		kitchen.sendRaw(t, `{"type":"ovos.utterance.handle","data":{"utterances":["empty session id"]},"context":{"session":{"session_id":""}}}`)
		kitchen.sendRaw(t, `{"type":"ovos.utterance.handle","data":{"utterances":["hub default named"]},"context":{"session":{"session_id":"chorus-pi-kitchen"}}}`)
		for _, c := range []struct{ text, session string }{
			{"no session", `{"session_id":"chorus-pi-kitchen"}`},
			{"empty session id", `{"session_id":"chorus-pi-kitchen"}`},
			// A satellite naming a hub-side id gets its own namespace, never another's.
			{"hub default named", `{"session_id":"chorus-pi-kitchen:chorus-pi-kitchen"}`},
		} {
			if _, in, _ := h.crossed(t, from, c.text+" on the hub", relayedText("hub", "ovos.utterance.handle", c.text)); sessionJSON(in.Msg) != c.session {
				t.Errorf("%s: hub session %s, want %s", c.text, sessionJSON(in.Msg), c.session)
			}
		}

		from = h.bus.len()
		to := map[string]any{"destination": "chorus:pi-kitchen"}
		withSession := func(s map[string]any) map[string]any {
			return map[string]any{"destination": "chorus:pi-kitchen", "session": s}
		}
		hub.send(t, newMsg("speak", map[string]any{"utterance": "hub default"}, withSession(map[string]any{"session_id": "default", "site_id": "hub-living-room"})))
		hub.send(t, newMsg("speak", map[string]any{"utterance": "other satellite"}, withSession(map[string]any{"session_id": "chorus-pi-office:morning", "lang": "de-de"})))
		hub.send(t, newMsg("speak", map[string]any{"utterance": "no session"}, to))
		hub.send(t, newMsg("speak", map[string]any{"utterance": "named"}, withSession(map[string]any{"session_id": "chorus-pi-kitchen:morning"})))
		for _, c := range []struct{ text, session string }{
			{"hub default", `{"session_id":"default"}`},
			{"other satellite", `{"session_id":"default"}`},
			{"no session", `{"session_id":"default"}`},
			{"named", `{"session_id":"morning"}`},
		} {
			if _, got, _ := h.crossed(t, from, c.text+" on pi-kitchen", relayedText("pi-kitchen", "speak", c.text)); sessionJSON(got.Msg) != c.session {
				t.Errorf("%s: satellite session %s, want %s", c.text, sessionJSON(got.Msg), c.session)
			}
		}
		checkRelayed(t, h.bus.slice(0, h.bus.len()))
	})

	t.Run("policy change applies mid-conversation", func(t *testing.T) {
		out := mustChorus(t, h.work, "fleet", "route", "add", "pi-kitchen", "--hub", "hub", "--allow", "ovos.utterance.handle",
			"--blacklist-skill", "music.skill", "--blacklist-intent", "timer.skill:set_timer")
		if want := "route pi-kitchen -> hub set (allow: ovos.utterance.handle)"; !strings.Contains(out, want) {
			t.Fatalf("route add printed %q, want %q", out, want)
		}
		from := h.bus.len()
		kitchen.sendRaw(t, `{"type":"recognizer_loop:utterance","data":{"utterances":["play some music"]}}`)
		kitchen.sendRaw(t, `{"type":"ovos.utterance.handle","data":{"utterances":["set a timer"]},`+
			`"context":{"session":{"session_id":"default","blacklisted_skills":["news.skill"]}}}`)
		i, in, before := h.crossed(t, from, "the allowed type on the hub", relayedText("hub", "ovos.utterance.handle", "set a timer"))
		if len(before) > 0 {
			t.Errorf("relayed before it (a type no longer allowed?): %v", before)
		}
		want := `{"blacklisted_intents":["timer.skill:set_timer"],"blacklisted_skills":["news.skill","music.skill"],"session_id":"chorus-pi-kitchen"}`
		if sessionJSON(in.Msg) != want {
			t.Errorf("hub session %s, want %s", sessionJSON(in.Msg), want)
		}
		// The hub's answer carries the merged session; the satellite gets its own back.
		hub.send(t, in.Msg.Reply("ovos.utterance.speak", map[string]any{"utterance": "Timer set"}))
		_, back, _ := h.crossed(t, i+1, "the answer on pi-kitchen", relayedText("pi-kitchen", "ovos.utterance.speak", "Timer set"))
		if want := `{"blacklisted_skills":["news.skill"],"session_id":"default"}`; sessionJSON(back.Msg) != want {
			t.Errorf("satellite session %s, want %s", sessionJSON(back.Msg), want)
		}

		// Back to the default policy: the very next message is judged by it.
		if out := mustChorus(t, h.work, "fleet", "route", "add", "pi-kitchen", "--hub", "hub"); !strings.Contains(out, "allow: recognizer_loop:utterance,ovos.utterance.handle") {
			t.Fatalf("route add printed %q", out)
		}
		from = h.bus.len()
		kitchen.sendRaw(t, `{"type":"recognizer_loop:utterance","data":{"utterances":["play some music again"]}}`)
		if _, in, _ = h.crossed(t, from, "the utterance on the hub", relayedText("hub", "recognizer_loop:utterance", "play some music again")); sessionJSON(in.Msg) != `{"session_id":"chorus-pi-kitchen"}` {
			t.Errorf("hub session after the policy was reset: %s", sessionJSON(in.Msg))
		}
	})

	t.Run("twins on a device bus", func(t *testing.T) { testTwinsE2E(t, h, bedroom) })

	t.Run("route rm departs", func(t *testing.T) {
		from := h.bus.len()
		if out := mustChorus(t, h.work, "fleet", "route", "rm", "pi-office"); !strings.Contains(out, "route pi-office removed") {
			t.Fatalf("route rm printed %q", out)
		}
		_, dereg, before := h.crossed(t, from, "the deregistration on the hub", relayedType("hub", bridge.TypeSkillDeregister))
		if len(before) > 0 {
			t.Errorf("relayed before: %v", before)
		}
		if dereg.Msg.Data["skill_id"] != "hello.chorus" || dereg.Msg.SessionID() != "chorus-pi-office" || dereg.Msg.Source() != "chorus:pi-office" {
			t.Errorf("hub got %s", dereg.Payload)
		}
		from = h.bus.len()
		h.publishOn(t, "pi-office", `{"type":"ovos.utterance.handle","data":{"utterances":["anyone there"]}}`)
		kitchen.sendRaw(t, `{"type":"ovos.utterance.handle","data":{"utterances":["still routed"]}}`)
		if _, _, before := h.crossed(t, from, "the kitchen on the hub", relayedText("hub", "ovos.utterance.handle", "still routed")); len(before) > 0 {
			t.Errorf("relayed from a satellite without a route: %v", before)
		}
	})

	t.Run("offline past the grace period gets nothing stale", func(t *testing.T) {
		needUtterances(t, kitchenIn, officeIn)
		from, stateFrom, offset := h.bus.len(), h.state.len(), len(h.gateway.out.String())
		killAgent(t, h.agents["pi-kitchen"])
		h.waitAvailability(t, "pi-kitchen", "offline", stateFrom) // the agent's Will
		hub.send(t, kitchenIn.Reply("speak", map[string]any{"utterance": "held, then stale"}))
		h.sent(t, from, "hub", "held, then stale")
		discarded := []string{"messages for satellite discarded", "satellite=pi-kitchen", "offline past the grace period"}
		waitOutput(t, h.gateway, offset, discarded...) // the held message, past the grace period
		offset = len(h.gateway.out.String())
		hub.send(t, kitchenIn.Reply("speak", map[string]any{"utterance": "stale"}))
		h.sent(t, from, "hub", "stale")
		waitOutput(t, h.gateway, offset, discarded...)

		stateFrom = h.state.len()
		h.startAgent(t, "pi-kitchen")
		h.waitOnline(t, "pi-kitchen", stateFrom)
		hub.send(t, kitchenIn.Reply("speak", map[string]any{"utterance": "welcome back"}))
		if _, _, before := h.crossed(t, from, "the fresh reply on pi-kitchen", relayedText("pi-kitchen", "speak", "welcome back")); len(before) > 0 {
			t.Errorf("relayed before the fresh reply: %v", before)
		}
	})

	checkRelayed(t, h.bus.slice(0, h.bus.len()))
}

// checkRelayed checks what the relay published over the whole run: on the
// hub, only the routes' utterance types and departures, each from a
// participant and in a hub-side session (the satellite's "default" never
// reaches the hub's); on a satellite, only what was addressed to it, in a
// session of its own; on pi-bedroom, only compat twins.
func checkRelayed(t *testing.T, log []seen) {
	t.Helper()
	for _, s := range log {
		if !s.Relayed {
			continue
		}
		id := s.Msg.SessionID()
		switch s.Device {
		case "hub":
			if !slices.Contains([]string{bridge.TypeUtterance, bridge.TypeUtteranceHandle, bridge.TypeSkillDeregister}, s.Type) ||
				!strings.HasPrefix(s.Msg.Source(), bridge.ParticipantPrefix) || !strings.HasPrefix(id, "chorus-pi-") {
				t.Errorf("relayed to the hub: %s", s)
			}
		case "pi-kitchen", "pi-office":
			if !slices.Contains(s.Msg.Destination(), bridge.ParticipantID(s.Device)) || id == "" || strings.HasPrefix(id, "chorus-") {
				t.Errorf("relayed to a satellite: %s", s)
			}
		case "pi-bedroom":
			if s.Msg.Context[bridge.KeyTwin] != true {
				t.Errorf("relayed to pi-bedroom, not a twin: %s", s)
			}
		default:
			t.Errorf("relayed to a device in no route: %s", s)
		}
	}
}

// testRouteCLI drives `chorus fleet route` against the real gateway: list,
// add and rm, and the mistakes a user makes, each refused with a clear
// message and changing nothing.
func testRouteCLI(t *testing.T, h *bridgeHome) {
	list := mustChorus(t, h.work, "fleet", "route", "list")
	for _, sat := range []string{"pi-kitchen", "pi-office"} {
		if !slices.ContainsFunc(strings.Split(list, "\n"), func(l string) bool {
			return slices.Equal(strings.Fields(l), []string{sat, "hub", "recognizer_loop:utterance,ovos.utterance.handle", "-"})
		}) {
			t.Errorf("route list has no line for %s:\n%s", sat, list)
		}
	}
	before := mustChorus(t, h.work, "fleet", "route", "list", "-o", "json")
	var got struct{ Routes []fleet.Route }
	if err := json.Unmarshal([]byte(before), &got); err != nil || len(got.Routes) != 2 ||
		got.Routes[0].Satellite != "pi-kitchen" || got.Routes[1].Satellite != "pi-office" || got.Routes[0].Hub != "hub" {
		t.Fatalf("route list -o json: %v\n%s", err, before)
	}

	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"no hub", []string{"add", "pi-bedroom"}, 2, "--hub is required"},
		{"unknown satellite", []string{"add", "pi-attic", "--hub", "hub"}, 1, `device "pi-attic" not found`},
		{"unknown hub", []string{"add", "pi-bedroom", "--hub", "hub-2"}, 1, `device "hub-2" not found`},
		{"own hub", []string{"add", "pi-bedroom", "--hub", "pi-bedroom"}, 1, "a device cannot be its own hub"},
		{"satellite is a hub", []string{"add", "hub", "--hub", "pi-bedroom"}, 1, "a satellite cannot be a hub"},
		{"hub is a satellite", []string{"add", "pi-bedroom", "--hub", "pi-kitchen"}, 1, "a hub cannot be a satellite"},
		{"type not a topic level", []string{"add", "pi-bedroom", "--hub", "hub", "--allow", "ovos/utterance"}, 1, "cannot be part of one MQTT topic level"},
		{"bad blacklisted skill", []string{"add", "pi-bedroom", "--hub", "hub", "--blacklist-skill", "bad skill"}, 1, "blacklisted skill"},
		{"rm unknown", []string{"rm", "pi-bedroom"}, 1, `no route for satellite "pi-bedroom"`},
		{"rm no arg", []string{"rm"}, 2, "accepts 1 arg(s), received 0"},
	}
	for _, tc := range tests {
		out, err := runChorus(t, h.work, append([]string{"fleet", "route"}, tc.args...)...)
		if exitCode(err) != tc.code || !strings.Contains(out, tc.wantErr) {
			t.Errorf("%s: exit %d, output %q; want exit %d and %q", tc.name, exitCode(err), out, tc.code, tc.wantErr)
		}
	}
	if after := mustChorus(t, h.work, "fleet", "route", "list", "-o", "json"); after != before {
		t.Errorf("the refused commands changed the routes:\n%s\nwant\n%s", after, before)
	}

	// A route added and removed again.
	if out := mustChorus(t, h.work, "fleet", "route", "add", "pi-bedroom", "--hub", "hub", "--allow", "speak"); !strings.Contains(out, "route pi-bedroom -> hub set (allow: speak)") {
		t.Errorf("route add printed %q", out)
	}
	if l := mustChorus(t, h.work, "fleet", "routes", "ls"); !strings.Contains(l, "pi-bedroom") {
		t.Errorf("route list after add:\n%s", l)
	}
	if out := mustChorus(t, h.work, "fleet", "route", "rm", "pi-bedroom"); !strings.Contains(out, "route pi-bedroom removed") {
		t.Errorf("route rm printed %q", out)
	}
	if after := mustChorus(t, h.work, "fleet", "route", "list", "-o", "json"); after != before {
		t.Errorf("routes after add and rm:\n%s\nwant\n%s", after, before)
	}
}

// testTwinsE2E sends every row of the twin table under each of its names on
// pi-bedroom's bus ("both" mode), one at a time: each is twinned exactly
// once under the other name, and a twin is never twinned again (BUS.md §5).
// The agent may answer some of these (skillmanager.list), so what is counted
// is keyed by a marker in the context, which twins copy.
func testTwinsE2E(t *testing.T, h *bridgeHome, bedroom *wsPeer) {
	from := h.bus.len()
	type sent struct{ key, typ, twin string }
	var all []sent
	send := func(key, typ, twin string, data map[string]any, skillID string) {
		bedroom.send(t, newMsg(typ, data, map[string]any{"e2e": key, bridge.KeySkillID: skillID}))
		all = append(all, sent{key, typ, twin})
		if twin != "" {
			h.crossed(t, from, "the twin of "+typ, func(s seen) bool { return s.Device == "pi-bedroom" && s.Type == twin && s.Msg.Context["e2e"] == key })
		}
	}
	for _, row := range bridge.TwinTable {
		legacy, v1 := map[string]any{"skill_id": "a.skill"}, map[string]any{"skill_id": "a.skill"}
		if row.ToV1 != nil { // mycroft.skills.list's map, ovos.skills.list.response's array
			legacy = map[string]any{"a.skill": map[string]any{"active": true, "id": "a.skill"}}
			v1 = map[string]any{"skills": []any{map[string]any{"skill_id": "b.skill", "active": false}}}
		}
		send("legacy-"+row.Legacy, row.Legacy, row.V1, legacy, "a.skill")
		send("v1-"+row.V1, row.V1, row.Legacy, v1, "a.skill")
	}
	// detach_skill naming another skill is not twinned (seeds/001 §5.7).
	send("unsafe-detach", "detach_skill", "", map[string]any{"skill_id": "b.skill"}, "a.skill")
	send("barrier", "mycroft.awoken", "ovos.listener.awoken", nil, "")

	twins := map[string][]seen{}
	for _, s := range h.bus.slice(from, h.bus.len()) {
		if key, _ := s.Msg.Context["e2e"].(string); s.Relayed && key != "" {
			twins[key] = append(twins[key], s)
		}
	}
	for _, snt := range all {
		var n int
		for _, s := range twins[snt.key] {
			switch {
			case s.Device != "pi-bedroom" || s.Msg.Context[bridge.KeyTwin] != true:
				t.Errorf("%s: relayed %s", snt.typ, s)
			case s.Type == snt.typ:
				t.Errorf("%s: twinned back to its own name (a twin of a twin): %s", snt.typ, s)
			case s.Type == snt.twin:
				n++
			}
		}
		want := 1
		if snt.twin == "" {
			want = 0
		}
		if n != want {
			t.Errorf("%s: %d twins named %q, want %d", snt.typ, n, snt.twin, want)
		}
	}
	// The payload transforms, end to end.
	for key, want := range map[string]string{
		"legacy-mycroft.skills.list":   `{"skills":[{"active":true,"skill_id":"a.skill"}]}`,
		"v1-ovos.skills.list.response": `{"b.skill":{"active":false,"id":"b.skill"}}`,
	} {
		for _, s := range twins[key] {
			if b, _ := json.Marshal(s.Msg.Data); (s.Type == "mycroft.skills.list" || s.Type == "ovos.skills.list.response") && string(b) != want {
				t.Errorf("%s: twin %s data %s, want %s", key, s.Type, b, want)
			}
		}
	}
}
