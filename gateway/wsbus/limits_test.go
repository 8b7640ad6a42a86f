package wsbus

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// OVOS's range of websocket.max_msg_size holds: with a 25 MB limit and a
// broker that carries it, a 10.5 MB frame (over the old 10 MB cap) is relayed;
// one the broker could not carry is refused with a log line naming
// broker.max_packet_size, and the connection stays up (issue 14: frames of
// 10-25 MB were dropped). TestOversizedFrameDropped covers a frame over
// websocket.max_msg_size.
func TestFrameLimits(t *testing.T) {
	const maxPacket = 11 << 20
	logs := &logBuffer{}
	e := &env{dev: brokertest.NewDevice(t, testDevice)}
	e.b = brokertest.Start(t, broker.Config{MaxPacketSize: maxPacket}, e.dev.Account)
	e.srv = startServer(t, e.b, Config{MaxFrame: MaxMaxFrame, MaxPacket: maxPacket, Logger: logs.logger()})
	obs := e.mqtt(t, "observer")
	conn := dial(t, e.srv)

	// Decoding 10 MB of JSON takes seconds under the race detector.
	const slow = 60 * time.Second
	big := frameOfSize("test.big", 10_500_000)
	sendSlow(t, conn, big, slow)
	if p, ok := obs.Next(slow); !ok || len(p.Payload) != len(big) {
		t.Fatalf("the 10.5 MB frame was not relayed")
	}
	sendSlow(t, conn, frameOfSize("test.over_broker", 12_000_000), slow)
	barrier := msg("test.barrier")
	send(t, conn, barrier)
	// The barrier is read after the 12 MB frame is decoded and refused.
	if got := countMQTTWithin(t, obs, slow, barrier); len(got) != 1 {
		t.Errorf("over-size frames reached the bus: %d messages before the barrier", len(got)-1)
	}
	for _, want := range []string{"a frame of 12000000 bytes", "over the broker's maximum packet size", "raise broker.max_packet_size",
		"the connection stays up"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func sendSlow(t *testing.T, conn *websocket.Conn, frame string, d time.Duration) {
	t.Helper()
	_ = conn.SetWriteDeadline(time.Now().Add(d))
	if err := conn.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// A skill's frames are capped at the broker's skill payload limit before
// they are read whole.
func TestSkillFrameLimit(t *testing.T) {
	logs := &logBuffer{}
	e := skillEnv(t, Config{Logger: logs.logger()})
	obs := e.mqtt(t, "observer")
	c := dialSkill(t, e.srv, "big.skill")
	send(t, c, frameOfSize("big.skill.flood", DefaultSkillMaxFrame+1))
	barrier := msg("big.skill.barrier")
	send(t, c, barrier)
	if got := countMQTT(t, obs, barrier); len(got) != 1 {
		t.Errorf("the over-size skill frame reached the bus")
	}
	if !strings.Contains(logs.String(), "over a skill's limit of 1048576 bytes") {
		t.Errorf("log does not say why the skill frame was refused:\n%s", logs)
	}
}

// Many clients sending big frames at once hold at most the frame budget:
// each waits for room instead of buffering MaxFrame of its own, and every
// frame still arrives (issue 14: ten clients of 10 MiB frames cost the agent
// 230 MB).
func TestFrameBudgetBoundsMemory(t *testing.T) {
	const frame, limit = 100 << 10, 128 << 10
	e := newEnv(t, Config{MaxFrame: limit, SkillMaxFrame: limit, FrameBudget: 2 * limit})
	obs := e.mqtt(t, "observer")
	const clients, each = 6, 3
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = dial(t, e.srv)
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := c.WriteMessage(websocket.TextMessage, []byte(frameOfSize("test.big", frame-i-j*clients))); err != nil {
					t.Errorf("write: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	got := 0
	for got < clients*each {
		if _, ok := obs.Next(wait); !ok {
			t.Fatalf("%d of %d big frames arrived", got, clients*each)
		}
		got++
	}
	if held := e.srv.budget.maxHeld(); held > 2*limit || held == 0 {
		t.Errorf("big frames held at once: %d bytes, want within the budget of %d", held, 2*limit)
	}
}
