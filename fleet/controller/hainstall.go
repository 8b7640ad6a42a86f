package controller

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// IntegrationActor is the audit log's actor for a change an integration
// (Home Assistant's update entity) asked for over MQTT.
const IntegrationActor = "integration"

// haInstallTimeout bounds the handling of one update/set command.
const haInstallTimeout = 30 * time.Second

// runHAInstalls serves update/set commands one at a time.
func (c *Controller) runHAInstalls() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case m := <-c.ha.installs:
			ctx, cancel := context.WithTimeout(c.ctx, haInstallTimeout)
			c.haInstall(ctx, m)
			cancel()
		}
	}
}

// haInstall answers `install` on chorus/v1/<device>/skill/<skill>/update/set
// (ARCHITECTURE.md §3): a rollout of the skill's latest published version to
// that one device, created by IntegrationActor. The broker's ACL lets only
// integrations publish there. A command for a skill the device does not run
// fleet-managed, or already runs at the latest version, changes nothing; so
// does any other payload. Every refusal is logged: MQTT has no reply here.
func (c *Controller) haInstall(ctx context.Context, m broker.Message) {
	t, err := topic.Parse(m.Topic)
	if err != nil || t.Kind != topic.KindSkillUpdateSet {
		return
	}
	log := c.log.With("device", t.Device, "skill", t.Skill)
	if string(m.Payload) != hadiscovery.PayloadInstall {
		log.Warn("update/set ignored: want the payload install", "payload", truncate(string(m.Payload), 64))
		return
	}
	d, err := c.store.GetDevice(ctx, t.Device)
	if err != nil {
		log.Warn("update/set ignored", "error", err)
		return
	}
	rep, _ := parseReport(d.Reported)
	s, ok := rep.Skill(t.Skill)
	if !ok || !s.Managed {
		log.Warn("update/set ignored: the device does not run this skill from the fleet")
		return
	}
	latest, err := c.store.LatestVersion(ctx, t.Skill)
	if err != nil {
		log.Warn("update/set ignored", "error", err)
		return
	}
	if s.Version == latest.Version {
		log.Info("update/set: already at the latest version", "version", s.Version)
		return
	}
	r, err := c.CreateRollout(ctx, IntegrationActor, &fleet.Rollout{SkillID: t.Skill, Version: latest.Version,
		Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.DeviceTarget(t.Device)}})
	if err != nil {
		log.Warn("update/set: create rollout", "version", latest.Version, "error", err)
		return
	}
	log.Info("update/set: rollout created", "rollout", r.ID, "version", latest.Version)
}
