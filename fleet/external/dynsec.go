package external

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittosync"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/skillcred"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// The live sync of Mosquitto's dynamic-security plugin (--mosquitto-dynsec):
// its own MQTT connection as the controller's account, which the bootstrap
// (mosquitto_ctrl dynsec init, or the export's superuser) allows on
// $CONTROL/dynamic-security/v1 (docs/security.md, "On an external broker").

// DynSecTriggers are the topics whose changes may change the skills the
// controller knows a device to have (knownSkills): the desired documents it
// publishes (assignments, rollout executions) and the skills devices report.
var DynSecTriggers = []string{"chorus/v1/+/desired", "chorus/v1/+/skills"}

// DynSecClients lists the accounts Mosquitto should hold: exactly those of
// the dynamic-security export (ExportMosquittoDynSec), each with the
// password the gateway can compute now: a skill's derived password, a local
// account's from its credential file. Device, integration and operator
// secrets reach the sync only through SecretIssued. It is the syncer's
// Config.Desired.
func (e *Exporter) DynSecClients(ctx context.Context) ([]mosquittosync.Client, error) {
	accts, _, _, err := e.exportInputs(ctx)
	if err != nil {
		return nil, err
	}
	if accts, err = e.withSkills(ctx, accts); err != nil {
		return nil, err
	}
	local := e.localSecrets()
	devices := map[string]*broker.Account{}
	for i := range accts {
		if a := &accts[i]; a.Role == broker.RoleDevice {
			devices[a.Device] = a
		}
	}
	out := make([]mosquittosync.Client, 0, len(accts))
	for _, a := range accts {
		dev := devices[a.Device]
		c := mosquittosync.Client{Username: a.Username, Kind: string(a.Role),
			Fingerprint: mosquittoexport.AccountFingerprint(a, dev), ACLs: mosquittoexport.AccountACLs(a)}
		switch {
		case a.Role == broker.RoleSkill && dev == nil:
			continue
		case a.Role == broker.RoleSkill:
			if c.Password, err = mosquittoexport.SkillPassword(dev, a.Skill); err != nil {
				return nil, fmt.Errorf("skill password of %s: %w", a.Username, err)
			}
		case local[a.Username] != "" && broker.HashSecret(local[a.Username]) == a.SecretHash:
			c.Password = local[a.Username]
		}
		out = append(out, c)
	}
	return out, nil
}

// SyncedAdapter is the controller's broker on an external Mosquitto with
// the live sync: every auth table the controller installs (after any
// registry change: devices, credentials, grants) also wakes the sync, and a
// desired document waits for its skills' clients.
type SyncedAdapter struct {
	*Adapter
	Sync *mosquittosync.Syncer
	Log  *slog.Logger
}

// dynsecGate bounds how long a desired document waits for its skills'
// clients. The document goes to the same Mosquitto the sync talks to, so a
// broker that cannot answer the sync within it cannot take the publish
// either; the wait falls only on the reconcile worker publishing it.
const dynsecGate = 3 * time.Second

// Publish sends m; a device's desired document first waits (awaitSkillClients)
// until Mosquitto holds a client for each skill it installs, so the agent
// never starts a skill that cannot yet log in (a failed start would fail the
// rollout). On the embedded broker the table derives skill accounts at once;
// Mosquitto needs them created.
func (s SyncedAdapter) Publish(m broker.Message) error {
	if users := desiredSkillUsers(m); len(users) > 0 && !awaitSkillClients(s.Sync, users) {
		if s.Sync.Healthy() {
			s.Log.Warn("publishing a desired document before Mosquitto holds its skills' clients", "topic", m.Topic)
		} else { // the sync logs its own failures; one line per document would flood a rollout
			s.Log.Debug("publishing a desired document without waiting: the dynamic-security sync is failing", "topic", m.Topic)
		}
	}
	return s.Adapter.Publish(m)
}

// SetTable records t and wakes the sync.
func (s SyncedAdapter) SetTable(t *broker.Table) {
	s.Adapter.SetTable(t)
	s.Sync.Trigger()
}

// awaitSkillClients is Publish's gate: true once the sync holds users. It
// waits dynsecGate at most, and only while the sync is worth waiting for:
// not at all while its last pass failed (its next try is a back-off away,
// and a stalled sync would otherwise cost every publish of a rollout the
// whole bound), and no longer once the sync closes, which it does when the
// gateway stops (Syncer.Await ends on both).
func awaitSkillClients(syncer *mosquittosync.Syncer, users []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), dynsecGate)
	defer cancel()
	return syncer.Await(ctx, users...)
}

// desiredSkillUsers lists the skill usernames a desired document installs;
// nil for any other message.
func desiredSkillUsers(m broker.Message) []string {
	t, err := topic.Parse(m.Topic)
	if err != nil || t.Kind != topic.KindDesired || len(m.Payload) == 0 {
		return nil
	}
	var doc desired.Doc
	if json.Unmarshal(m.Payload, &doc) != nil {
		return nil
	}
	var users []string
	for _, id := range slices.Sorted(maps.Keys(doc.Skills)) {
		users = append(users, skillcred.Username(t.Device, id))
	}
	return users
}
