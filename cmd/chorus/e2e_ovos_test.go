//go:build !chorus_agent

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/ovosrt/ovostest"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

const helloOVOS = "ovos-skill-hello-world.openvoiceos"

// busLog collects the device bus and the skills topic as one observer sees
// them, in order.
type busLog struct {
	t      *testing.T
	c      *brokertest.Client
	device string
	msgs   []envelope.Message
	states []string // the hello skill's successive states on the skills topic
}

// until reads until cond holds (bounded).
func (b *busLog) until(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		m, ok := b.c.Next(time.Until(deadline))
		if !ok {
			b.t.Fatalf("never %s; states %v; bus %v", what, b.states, b.types())
		}
		b.add(m)
	}
}

func (b *busLog) add(m *paho.Publish) {
	switch {
	case m.Topic == "chorus/v1/"+b.device+"/skills":
		var s skillsTopic
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			b.t.Fatalf("skills payload: %v", err)
		}
		for _, sk := range s.Skills {
			if sk.ID == helloOVOS && (len(b.states) == 0 || b.states[len(b.states)-1] != sk.State) {
				b.states = append(b.states, sk.State)
			}
		}
	case strings.HasPrefix(m.Topic, "chorus/v1/"+b.device+"/bus/"):
		msg, err := envelope.Decode(m.Payload)
		if err != nil {
			b.t.Fatalf("bus payload on %s: %v", m.Topic, err)
		}
		b.msgs = append(b.msgs, msg)
	}
}

func (b *busLog) state() string {
	if len(b.states) == 0 {
		return ""
	}
	return b.states[len(b.states)-1]
}

// count is how many messages of type t naming the hello skill (data.id or
// data.skill_id) were seen; t alone when any is true.
func (b *busLog) count(t string, any bool) int {
	n := 0
	for _, m := range b.msgs {
		if m.Type == t && (any || m.Data["id"] == helloOVOS || m.Data["skill_id"] == helloOVOS) {
			n++
		}
	}
	return n
}

func (b *busLog) types() []string {
	var out []string
	for _, m := range b.msgs {
		out = append(out, m.Type)
	}
	return out
}

func (b *busLog) index(t string) int {
	for i, m := range b.msgs {
		if m.Type == t {
			return i
		}
	}
	return -1
}

// The first "done when": on a cold `chorus up` with a runtime ovos
// skill, the (stand-in) ovos-skill-launcher asks is_ready once, is told no,
// waits for mycroft.ready and loads; the skills topic says loading until
// the launcher reports, loaded after; one mycroft.skills.loaded per load;
// deactivate and activate are handled by the agent alone (one detach_skill,
// the launcher's); and the skill cannot deactivate anything itself.
func TestUpOVOSSkillE2E(t *testing.T) {
	t.Parallel()
	launcher := ovostest.Launcher(t)
	work := t.TempDir()
	data := filepath.Join(work, "data")
	skills := filepath.Join(work, "skills")
	ovostest.WriteSkill(t, skills, helloOVOS)
	conf := filepath.Join(work, "chorus.json")
	cfg := `{"skills": {"ovos": {"launcher": "` + launcher + `"}}}`
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChorus(t, work, "up", "--config", conf, "--data-dir", data, "--device", "pi-ovos", "--skills", skills,
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
	up := waitUp(t, p, data)
	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-ovos/#")
	b := &busLog{t: t, c: obs, device: "pi-ovos"}

	b.until("loading", func() bool { return b.state() == "loading" })
	b.until("loaded", func() bool { return b.state() == "loaded" })
	if got := strings.Join(b.states, ","); got != "loading,loaded" {
		t.Errorf("skills topic states %s, want loading,loaded", got)
	}
	// The agent's own announcement of the load (mycroft.skill.loaded) and
	// an answer from the skill fence what each party sent for this load.
	ask(t, data, helloOVOS+":HelloWorldIntent.intent")
	b.until("the skill answers", func() bool { return b.count("speak", true) == 1 && b.count("mycroft.skill.loaded", false) == 1 })
	if n := b.count("mycroft.skills.loaded", false); n != 1 {
		t.Errorf("%d mycroft.skills.loaded for one load, want 1; bus %v", n, b.types())
	}
	if n := b.count("mycroft.ready", true); n != 1 {
		t.Errorf("%d mycroft.ready, want 1", n)
	}
	// The launcher asked once. Asked before mycroft.ready, it was told no and
	// loaded after mycroft.ready; a launcher that started after the agent
	// was ready (a slow Python start under load) was told yes and loaded at
	// once, as ovos-workshop's launcher does either way.
	isReady, ready, loaded := b.index("mycroft.skills.is_ready"), b.index("mycroft.ready"), b.index("mycroft.skills.loaded")
	answer := b.index("mycroft.skills.is_ready.response")
	if isReady < 0 || answer < 0 || ready < 0 || b.count("mycroft.skills.is_ready", true) != 1 {
		t.Fatalf("bus: is_ready %d (answered at %d), mycroft.ready %d; %v", isReady, answer, ready, b.types())
	}
	told := b.msgs[answer].Data["status"]
	switch {
	case isReady < ready && (told != false || !(ready < loaded)):
		t.Errorf("asked before mycroft.ready: told %v, loaded at %d (ready at %d); want told false and loaded after ready; %v", told, loaded, ready, b.types())
	case isReady > ready && (told != true || !(isReady < loaded)):
		t.Errorf("asked after mycroft.ready: told %v, loaded at %d (asked at %d); want told true and loaded after; %v", told, loaded, isReady, b.types())
	}

	// The skill itself, on its own route, cannot deactivate anything: the
	// broker refuses the management type. A message after it on the same
	// connection fences the check.
	ws := skillSocket(t, data, "pi-ovos", helloOVOS)
	for _, f := range []string{
		`{"type":"skillmanager.deactivate","data":{"skill":"` + helloOVOS + `"},"context":{}}`,
		`{"type":"chorus.e2e.fence","data":{},"context":{}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	b.until("the fence", func() bool { return b.count("chorus.e2e.fence", true) == 1 })
	if n := b.count("skillmanager.deactivate", true); n != 0 || b.state() != "loaded" {
		t.Fatalf("a skill's skillmanager.deactivate reached the bus (%d) or changed the state (%s)", n, b.state())
	}

	// Deactivate by the device: the agent stops the launcher, which unloads
	// its skill and sends the only detach_skill.
	send(t, data, "skillmanager.deactivate", `{"skill":"`+helloOVOS+`"}`)
	b.until("inactive", func() bool { return b.state() == "inactive" })
	if n := b.count("detach_skill", false); n != 1 {
		t.Errorf("%d detach_skill for one deactivate, want 1; bus %v", n, b.types())
	}
	send(t, data, "skillmanager.activate", `{"skill":"`+helloOVOS+`"}`)
	b.until("loaded again", func() bool { return b.state() == "loaded" })
	ask(t, data, helloOVOS+":HelloWorldIntent.intent")
	b.until("announced and answering again", func() bool {
		return b.count("mycroft.skill.loaded", false) == 2 && b.count("speak", true) == 2
	})
	if n := b.count("mycroft.skills.loaded", false); n != 2 {
		t.Errorf("%d mycroft.skills.loaded for two loads, want 2; bus %v", n, b.types())
	}
	if err := p.stop(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// ask sends the skill's intent as the intent service would.
func ask(t *testing.T, data, intent string) {
	t.Helper()
	send(t, data, intent, `{"utterance":"hello world"}`)
}

func send(t *testing.T, data, typ, payload string) {
	t.Helper()
	out, err := exec.Command(chorusBin, "bus", "send", typ, "--data", payload, "--data-dir", data).CombinedOutput()
	if err != nil {
		t.Fatalf("bus send %s: %v\n%s", typ, err, out)
	}
}

// skillSocket connects to the drop-in as the skill, with the route the
// agent wrote into the skill's generated mycroft.conf.
func skillSocket(t *testing.T, data, device, skill string) *websocket.Conn {
	t.Helper()
	agentDir := filepath.Join(data, "agents", device)
	var conf string
	for _, c := range []string{
		filepath.Join(agentDir, "home", skill, ".config", "mycroft", "mycroft.conf"),
		filepath.Join(agentDir, "ovos-homes", skill, ".config", "mycroft", "mycroft.conf"),
	} {
		if _, err := os.Stat(c); err == nil {
			conf = c
		}
	}
	if conf == "" {
		t.Fatalf("no generated mycroft.conf for %s under %s", skill, agentDir)
	}
	ws, _, err := websocket.DefaultDialer.Dial(ovosBusURL(t, conf), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, greet, err := ws.ReadMessage(); err != nil || !strings.Contains(string(greet), `"connected"`) {
		t.Fatalf("greeting: %v %s", err, greet)
	}
	return ws
}

// The shared host: three trusted runtime ovos skills in one Python process,
// each loaded through its own route (the agent takes a load only from the
// skill's own connection) and answering with its own identity (the broker
// refuses a context.skill_id naming another skill); deactivating one leaves
// the others and the host running.
func TestUpOVOSSharedHostE2E(t *testing.T) {
	t.Parallel()
	launcher := ovostest.Launcher(t)
	work := t.TempDir()
	data := filepath.Join(work, "data")
	skills := filepath.Join(work, "skills")
	ids := []string{"one.ovos", "two.ovos", "three.ovos"}
	for _, id := range ids {
		ovostest.WriteSkill(t, skills, id)
	}
	conf := filepath.Join(work, "chorus.json")
	if err := os.WriteFile(conf, []byte(`{"skills": {"ovos": {"launcher": "`+launcher+`", "shared": ["*"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChorus(t, work, "up", "--config", conf, "--data-dir", data, "--device", "pi-shared", "--skills", skills,
		"--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
	up := waitUp(t, p, data)
	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-shared/skills")
	waitSkills(t, obs, "pi-shared", func(s map[string]string) bool {
		return s["one.ovos"] == "loaded" && s["two.ovos"] == "loaded" && s["three.ovos"] == "loaded"
	})
	if hosts, singles := launcherProcs(t, launcher); hosts != 1 || singles != 0 {
		t.Fatalf("%d shared hosts and %d single launchers, want 1 and 0", hosts, singles)
	}
	speaks := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "speaks"})
	speaks.Sub(t, "chorus/v1/pi-shared/bus/speak")
	for _, id := range ids {
		ask(t, data, id+":HelloWorldIntent.intent")
	}
	who := map[string]bool{}
	for len(who) < len(ids) {
		m := speaks.Expect(t, "chorus/v1/pi-shared/bus/speak", 20*time.Second)
		msg, err := envelope.Decode(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := msg.Context["skill_id"].(string)
		who[id] = true
	}
	for _, id := range ids {
		if !who[id] {
			t.Errorf("no answer from %s (got %v)", id, who)
		}
	}

	send(t, data, "skillmanager.deactivate", `{"skill":"two.ovos"}`)
	waitSkills(t, obs, "pi-shared", func(s map[string]string) bool {
		return s["two.ovos"] == "inactive" && s["one.ovos"] == "loaded" && s["three.ovos"] == "loaded"
	})
	if hosts, _ := launcherProcs(t, launcher); hosts != 1 {
		t.Fatalf("%d shared hosts after deactivating one skill, want 1", hosts)
	}
	if err := p.stop(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// launcherProcs counts the running processes of the launcher at path: in
// shared-host mode and single.
func launcherProcs(t *testing.T, path string) (hosts, singles int) {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), path) {
			continue
		}
		if strings.Contains(string(b), "--host") {
			hosts++
		} else {
			singles++
		}
	}
	return hosts, singles
}
