package examples

import (
	"context"
	"strings"

	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// Message types of the echo-hub example (the v1 names, seeds/001 §5.2).
const (
	TypeUtteranceHandle = "ovos.utterance.handle"
	TypeUtteranceSpeak  = "ovos.utterance.speak"
)

// bridgedPrefix starts the source the gateway's bridge stamps on what a
// satellite sends (gateway/bridge.ParticipantPrefix).
const bridgedPrefix = "chorus:"

// setupEchoHub answers every utterance that reached this device across a
// bridging route (context.source "chorus:<satellite>") by speaking it back:
// "You said: …". The answer is the MSG-1 §5.2 reply, so its destination is
// the satellite and the gateway relays it there (docs/bridging.md). Local
// utterances are left alone, so the example is harmless on any device. It
// needs no intent engine and nothing else (no requirements).
func setupEchoHub(s *skillkit.Skill) error {
	echo := func(speakType string) bus.Handler {
		return func(ctx context.Context, d bus.Delivery) {
			text := firstUtterance(d)
			if text == "" || !strings.HasPrefix(d.Message.Source(), bridgedPrefix) {
				return
			}
			speak := d.Message.Reply(speakType, map[string]any{"utterance": "You said: " + text})
			if err := s.Bus().Reply(ctx, d, speak); err != nil {
				s.Logger().Warn("speak", "err", err)
			}
		}
	}
	if _, err := s.Bus().On(TypeUtterance, echo(TypeSpeak)); err != nil {
		return err
	}
	_, err := s.Bus().On(TypeUtteranceHandle, echo(TypeUtteranceSpeak))
	return err
}
