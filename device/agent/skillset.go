package agent

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/device/skillmanager"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// switchEmitTimeout bounds the one bus publish a switch command causes.
const switchEmitTimeout = 5 * time.Second

// switchTypes maps a skill/<skill>/set payload (Home Assistant's switch
// payload_on / payload_off, ARCHITECTURE.md §3) to the skill manager event
// it becomes.
var switchTypes = map[string]string{
	"ON":  skillmanager.TypeActivate,
	"OFF": skillmanager.TypeDeactivate,
}

// startSkillSwitches subscribes chorus/v1/<device>/skill/+/set, where
// integrations (Home Assistant's skill switches) turn skills on and off:
// ON emits skillmanager.activate {"skill": id} on the device bus, OFF
// skillmanager.deactivate, and the manager acts and persists the choice as
// for any other sender (SKILL_MANAGER §7). Anything else is logged and
// ignored; so is a retained command (the broker refuses them; a replay at
// subscribe would flip a skill on every restart).
//
// The emit runs on the transport's delivery goroutine, which the transport
// owns and waits for on Close: it is one QoS 1 publish on the connection the
// command came in on, bounded by switchEmitTimeout, so nothing else needs
// stopping.
func (a *Agent) startSkillSwitches(ctx context.Context) error {
	if err := topic.ValidDeviceID(a.cfg.Device); err != nil {
		return err
	}
	filter := topic.Root + "/" + a.cfg.Device + "/skill/+/set"
	_, err := a.mqtt.Subscribe(ctx, filter, a.skillSwitch)
	return err
}

func (a *Agent) skillSwitch(p bus.Packet) {
	t, err := topic.Parse(p.Topic)
	if err != nil || t.Kind != topic.KindSkillSet || t.Device != a.cfg.Device {
		return
	}
	log := a.log.With("skill", t.Skill)
	msgType, ok := switchTypes[string(p.Payload)]
	switch {
	case p.Retain:
		log.Warn("retained skill switch command ignored", "payload", clip(p.Payload))
		return
	case !ok:
		log.Warn("skill switch command ignored: want ON or OFF", "payload", clip(p.Payload))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), switchEmitTimeout)
	defer cancel()
	if err := a.bus.Emit(ctx, envelope.New(msgType, map[string]any{"skill": t.Skill})); err != nil {
		log.Warn("skill switch", "type", msgType, "error", err)
		return
	}
	log.Info("skill switch", "type", msgType)
}

// clip keeps a logged payload short.
func clip(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
