package examples_test

import (
	"bytes"
	"testing"

	"github.com/chorus-edge/chorus/device/settings"
	"github.com/chorus-edge/chorus/device/skillkit/examples"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// TestExamplesAnswerPing runs each bundled skill as a real process (launcher,
// its minted credentials, the real broker) and asks it over the bus.
func TestExamplesAnswerPing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, ping string
		settings map[string]any // written before the skill starts; nil = none
		want     map[string]any
	}{
		{id: "hello.chorus", ping: examples.TypeHelloPing,
			want: map[string]any{"greeting": "hello from " + testDevice}},
		{id: "weather.chorus", ping: examples.TypeWeatherPing,
			want: map[string]any{"forecast": examples.Forecast, "units": examples.DefaultUnits}},
		{id: "weather.chorus", ping: examples.TypeWeatherPing, settings: map[string]any{"units": "imperial"},
			want: map[string]any{"forecast": examples.Forecast, "units": "imperial"}},
		{id: "screen.chorus", ping: examples.TypeScreenPing,
			want: map[string]any{"screen": "shown on the screen of " + testDevice}},
	}
	for _, tt := range tests {
		t.Run(tt.id+mustJSON(t, tt.settings), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			if tt.settings != nil {
				if err := settings.Write(h.settings, tt.id, tt.settings); err != nil {
					t.Fatal(err)
				}
			}
			p := h.start(t, tt.id)
			ping := envelope.New(tt.ping, nil).WithContext("source", "test-client").WithContext("destination", tt.id)
			h.send(t, ping, "corr-"+tt.id)
			pub, resp := h.expectRaw(t, tt.ping+".response", p)
			if got := pub.Properties.CorrelationData; !bytes.Equal(got, []byte("corr-"+tt.id)) {
				t.Errorf("correlation data = %q, want %q", got, "corr-"+tt.id)
			}
			if got, want := mustJSON(t, resp.Data), mustJSON(t, tt.want); got != want {
				t.Errorf("response data = %s, want %s", got, want)
			}
			// MSG-1 §5.2: the routing is turned around.
			if resp.Source() != tt.id || resp.Destination()[0] != "test-client" {
				t.Errorf("response context = %v, want source %s destination test-client", resp.Context, tt.id)
			}
		})
	}
}

func TestHelloSpeaksOnHello(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start(t, "hello.chorus")
	for _, u := range []string{"what time is it", "Hello there"} {
		msg := envelope.New(examples.TypeUtterance, map[string]any{"utterances": []any{u}}).
			WithContext("source", "audio").WithContext("session", map[string]any{"session_id": "s-1"})
		h.send(t, msg, "")
	}
	speak := h.expect(t, examples.TypeSpeak, p)
	if got := speak.Data["utterance"]; got != "Hello!" {
		t.Errorf("speak utterance = %v, want Hello!", got)
	}
	if speak.Destination()[0] != "audio" || speak.SessionID() != "s-1" {
		t.Errorf("speak context = %v, want destination audio and session s-1", speak.Context)
	}
}

func TestWeatherSeesSettingsChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start(t, "weather.chorus")
	if err := settings.Write(h.settings, "weather.chorus", map[string]any{"units": "kelvin"}); err != nil {
		t.Fatal(err)
	}
	h.send(t, envelope.New("ovos.skills.settings_changed", map[string]any{"skill_id": "weather.chorus"}), "")
	h.send(t, envelope.New(examples.TypeWeatherPing, nil), "c")
	resp := h.expect(t, examples.TypeWeatherPing+".response", p)
	if resp.Data["units"] != "kelvin" {
		t.Errorf("units after the change = %v, want kelvin", resp.Data["units"])
	}
}
