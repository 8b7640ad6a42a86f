package main

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// ExportMosquittoDynSec renders the accounts of ExportMosquitto plus one
// skill account per skill the controller knows each device to have, as
// Mosquitto's dynamic-security config (docs/security.md, "On an external
// broker"). The skill list is a snapshot: export again when skills change.
func (f *exportingFleet) ExportMosquittoDynSec(ctx context.Context) ([]byte, []string, error) {
	accts, hashes, supers, err := f.exportInputs(ctx)
	if err != nil {
		return nil, nil, err
	}
	if accts, err = f.withSkills(ctx, accts); err != nil {
		return nil, nil, err
	}
	out, err := mosquittoexport.RenderDynSec(accts, hashes, supers...)
	if err != nil {
		return nil, nil, err
	}
	return out.JSON, out.Skipped, nil
}

// withSkills adds to accts one skill account per skill the controller
// knows each of its devices to have (knownSkills), as the broker derives it.
// The dynamic-security export and the live sync (gateway_dynsec.go) both
// list these.
func (f *exportingFleet) withSkills(ctx context.Context, accts []broker.Account) ([]broker.Account, error) {
	skills, err := knownSkills(ctx, f.store)
	if err != nil {
		return nil, err
	}
	var table *broker.Table
	if f.table != nil {
		table = f.table()
	}
	for _, a := range slices.Clone(accts) {
		if a.Role != broker.RoleDevice {
			continue
		}
		for _, s := range skills[a.Device] {
			accts = append(accts, skillAccount(table, a.Device, s))
		}
	}
	return accts, nil
}

// skillAccount is the skill's account as the broker derives it from the
// live table (with its grants); the default account when the table has no
// such device yet.
func skillAccount(t *broker.Table, device, skill string) broker.Account {
	if t != nil {
		if a, ok := t.Lookup(skillcred.Username(device, skill)); ok {
			return *a
		}
	}
	return broker.SkillAccount(device, skill)
}

// knownSkills lists, per device, the skills the controller knows of: those
// its assignments install there (the desired document's skills), those an
// open install rollout will install there (a rollout puts its assignment only
// when a device's execution starts, so an export taken before the devices
// come online must know them from the rollout), and those the device last
// reported; sorted.
func knownSkills(ctx context.Context, st *sqlite.DB) (map[string][]string, error) {
	devs, err := st.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		return nil, err
	}
	pending, err := pendingInstalls(ctx, st)
	if err != nil {
		return nil, err
	}
	as, err := st.ListAssignments(ctx, fleet.AssignmentFilter{})
	if err != nil {
		return nil, err
	}
	// Only the ids matter: any published version will do.
	anyVersion := func(string, string) (*fleet.SkillVersion, bool) { return &fleet.SkillVersion{}, true }
	out := map[string][]string{}
	for _, d := range devs {
		set := map[string]bool{}
		for _, id := range pending[d.ID] {
			set[id] = true
		}
		for id := range fleet.ComputeDesired(d.ID, d.Tags, as, anyVersion) {
			set[id] = true
		}
		var rep struct {
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		if len(d.Reported) > 0 && json.Unmarshal(d.Reported, &rep) == nil {
			for _, s := range rep.Skills {
				set[s.ID] = true
			}
		}
		for id := range set {
			if fleet.ValidSkillID(id) == nil {
				out[d.ID] = append(out[d.ID], id)
			}
		}
		slices.Sort(out[d.ID])
	}
	return out, nil
}

// pendingInstalls maps a device to the skills of the open install rollouts
// whose execution there has not ended.
func pendingInstalls(ctx context.Context, st *sqlite.DB) (map[string][]string, error) {
	rs, err := st.ListRollouts(ctx, fleet.RolloutFilter{States: []fleet.RolloutState{
		fleet.RolloutQueued, fleet.RolloutInProgress, fleet.RolloutPaused}})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range rs {
		if r.Action != fleet.RolloutInstall {
			continue
		}
		es, err := st.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID,
			States: []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress}})
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out[e.DeviceID] = append(out[e.DeviceID], r.SkillID)
		}
	}
	return out, nil
}
