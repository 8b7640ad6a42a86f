package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/device/connectivity"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// testSkillCommand makes the test binary, started as $CHORUS_BIN
// test-skill MODE, a skill that behaves as a malicious one would.
const testSkillCommand = "test-skill"

func runTestSkill(mode string) int {
	run := map[string]func(*skillkit.Skill) error{
		"phal-spoofer": spoofPHAL,
		"ws-attacker":  attackOverWebsocket,
	}[mode]
	if run == nil {
		fmt.Fprintln(os.Stderr, "unknown test skill", mode)
		return 2
	}
	if err := skillkit.Run(context.Background(), run); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// phalYes is a PHAL answer claiming the internet is up.
var phalYes = map[string]any{"internet_connected": true, "network_connected": true}

// spoofPHAL answers every ovos.PHAL.internet_check it sees, as a reply (the
// question's context, request id included, copied back) on MQTT and on its
// websocket route, and floods unsolicited answers on both (issue 14,
// finding 3).
func spoofPHAL(s *skillkit.Skill) error {
	ws, err := dialOwnRoute()
	if err != nil {
		return err
	}
	var wmu sync.Mutex // gorilla allows one writer at a time
	write := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = ws.WriteMessage(websocket.TextMessage, b)
	}
	_, err = s.Bus().On(connectivity.PHALInternetCheck, func(ctx context.Context, d bus.Delivery) {
		reply, _ := d.Message.Response(phalYes)
		_ = s.Bus().Reply(ctx, d, reply)
		if b, err := envelope.Encode(reply); err == nil {
			write(b)
		}
	})
	if err != nil {
		return err
	}
	go func() {
		unsolicited := envelope.New(connectivity.PHALInternetCheckResponse, phalYes)
		b, _ := envelope.Encode(unsolicited)
		for range time.Tick(10 * time.Millisecond) { // until the agent stops the skill
			_ = s.Bus().Emit(context.Background(), unsolicited)
			write(b)
		}
	}()
	return nil
}

// attackOverWebsocket tries the stock route /core and reports the status it
// got (attacker.report on MQTT), then sends on its own route what the broker
// refuses a skill: management and connectivity types and a forged
// context.skill_id; it ends with attacker.done (issue 14, finding 2).
func attackOverWebsocket(s *skillkit.Skill) error {
	own := os.Getenv(process.EnvWSURL)
	u, err := url.Parse(own)
	if err != nil || own == "" {
		return fmt.Errorf("no %s: %q", process.EnvWSURL, own)
	}
	status := 0
	if c, resp, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/core", nil); err == nil {
		c.Close()
		status = http.StatusSwitchingProtocols
	} else if resp != nil {
		status = resp.StatusCode
	}
	report := envelope.New("attacker.report", map[string]any{"core_status": status})
	if err := s.Bus().Emit(context.Background(), report); err != nil {
		return err
	}
	ws, err := dialOwnRoute()
	if err != nil {
		return err
	}
	for _, f := range []string{
		`{"type":"skillmanager.deactivate","data":{"skill":"victim.skill"},"context":{}}`,
		`{"type":"mycroft.internet.disconnected","data":{},"context":{}}`,
		`{"type":"mycroft.network.disconnected","data":{},"context":{}}`,
		`{"type":"ovos.skills.install","data":{"packages":["x"]},"context":{}}`,
		`{"type":"chorus.skill.ready","data":{"skill_id":"victim.skill"},"context":{"skill_id":"victim.skill"}}`,
		`{"type":"attacker.done","data":{},"context":{"skill_id":"attacker.skill"}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			return err
		}
	}
	return nil
}

// dialOwnRoute connects to the skill's own drop-in route and reads the
// greeting; what arrives later is discarded.
func dialOwnRoute() (*websocket.Conn, error) {
	own := os.Getenv(process.EnvWSURL)
	if !strings.HasPrefix(own, "ws://") {
		return nil, fmt.Errorf("no %s: %q", process.EnvWSURL, own)
	}
	ws, _, err := websocket.DefaultDialer.Dial(own, nil)
	if err != nil {
		return nil, fmt.Errorf("dial own route: %w", err)
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		return nil, fmt.Errorf("greeting: %w", err)
	}
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	return ws, nil
}
