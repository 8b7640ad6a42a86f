package examples

import (
	"context"
	"fmt"

	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// answer subscribes msgType and answers each message with the MSG-1 §5.3
// Response (<type>.response, routing turned around) built from data, sent
// with Reply so the asker's MQTT 5 correlation data is echoed.
func answer(s *skillkit.Skill, msgType string, data func() (map[string]any, error)) error {
	_, err := s.Bus().On(msgType, func(ctx context.Context, d bus.Delivery) {
		if err := respond(ctx, s, d, data); err != nil {
			s.Logger().Warn("answer", "type", msgType, "err", err)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", msgType, err)
	}
	return nil
}

func respond(ctx context.Context, s *skillkit.Skill, d bus.Delivery, data func() (map[string]any, error)) error {
	payload, err := data()
	if err != nil {
		return err
	}
	resp, err := d.Message.Response(payload)
	if err != nil {
		return err
	}
	return s.Bus().Reply(ctx, d, resp)
}
