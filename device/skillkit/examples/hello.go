package examples

import (
	"context"
	"strings"

	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// Message types of the hello example.
const (
	TypeHelloPing = "hello.chorus.ping"
	TypeUtterance = "recognizer_loop:utterance"
	TypeSpeak     = "speak"
)

// setupHello answers hello.chorus.ping with a greeting naming the device, and
// says "Hello!" when the first utterance of recognizer_loop:utterance
// contains "hello". It needs nothing (no requirements).
func setupHello(s *skillkit.Skill) error {
	err := answer(s, TypeHelloPing, func() (map[string]any, error) {
		return map[string]any{"greeting": "hello from " + s.Device()}, nil
	})
	if err != nil {
		return err
	}
	_, err = s.Bus().On(TypeUtterance, func(ctx context.Context, d bus.Delivery) {
		if !strings.Contains(strings.ToLower(firstUtterance(d)), "hello") {
			return
		}
		// MSG-1 §5.2: a reply routes the answer back to the utterance's source.
		speak := d.Message.Reply(TypeSpeak, map[string]any{"utterance": "Hello!"})
		if err := s.Bus().Reply(ctx, d, speak); err != nil {
			s.Logger().Warn("speak", "err", err)
		}
	})
	return err
}

// firstUtterance is data.utterances[0], or "" when it is not a string.
func firstUtterance(d bus.Delivery) string {
	list, _ := d.Message.Data["utterances"].([]any)
	if len(list) == 0 {
		return ""
	}
	u, _ := list[0].(string)
	return u
}
