package examples_test

import (
	"testing"

	"github.com/chorus-edge/chorus/device/skillkit/examples"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// TestEchoHubAnswersBridgedUtterances: a local utterance gets no answer, a
// bridged one is spoken back to its satellite through the MSG-1 reply.
func TestEchoHubAnswersBridgedUtterances(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start(t, "echo-hub.chorus")
	local := envelope.New(examples.TypeUtterance, map[string]any{"utterances": []any{"local"}}).WithContext("source", "audio")
	h.send(t, local, "")
	bridged := envelope.New(examples.TypeUtterance, map[string]any{"utterances": []any{"turn on the light"}}).
		WithContext("source", "chorus:pi-kitchen").WithContext("destination", "skills").
		WithContext("session", map[string]any{"session_id": "chorus-pi-kitchen"})
	h.send(t, bridged, "")
	speak := h.expect(t, examples.TypeSpeak, p)
	if got := speak.Data["utterance"]; got != "You said: turn on the light" {
		t.Fatalf("speak utterance = %v (the local utterance must get no answer)", got)
	}
	if d := speak.Destination(); len(d) != 1 || d[0] != "chorus:pi-kitchen" || speak.Source() != "skills" || speak.SessionID() != "chorus-pi-kitchen" {
		t.Errorf("speak context = %v", speak.Context)
	}
	h.send(t, envelope.New(examples.TypeUtteranceHandle, map[string]any{"utterances": []any{"v1"}}).WithContext("source", "chorus:pi-kitchen"), "")
	if m := h.expect(t, examples.TypeUtteranceSpeak, p); m.Data["utterance"] != "You said: v1" {
		t.Errorf("ovos.utterance.speak = %v", m.Data)
	}
}
