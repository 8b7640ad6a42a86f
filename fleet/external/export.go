package external

import (
	"context"
	"log/slog"
	"slices"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittosync"
	"github.com/chorus-edge/chorus/gateway/state"
)

// ExportStore is what the exports read and record in the fleet store;
// *sqlite.DB satisfies it.
type ExportStore interface {
	ListDevices(ctx context.Context, f fleet.DeviceFilter) ([]*fleet.Device, error)
	ListAssignments(ctx context.Context, f fleet.AssignmentFilter) ([]*fleet.Assignment, error)
	ListRollouts(ctx context.Context, f fleet.RolloutFilter) ([]*fleet.Rollout, error)
	ListExecutions(ctx context.Context, f fleet.ExecutionFilter) ([]*fleet.Execution, error)
	PutExportHash(ctx context.Context, h fleet.ExportHash) error
	ExportHashes(ctx context.Context) (map[string]fleet.ExportHash, error)
}

// ExporterConfig configures an Exporter. Store and Accounts are required.
type ExporterConfig struct {
	Store ExportStore
	// Accounts lists the auth table's accounts as the registry holds them
	// (controller.Controller.Accounts): devices with their skills' grants,
	// integrations, operators and the local accounts.
	Accounts func(ctx context.Context) ([]broker.Account, error)
	// Local are the gateway's own credentials (localauth), whose plain
	// secrets are on disk: their hashes are computed at each export.
	Local []configs.Credential
	// Super is the controller's own account on an external broker, exported
	// as a superuser; empty on the embedded broker.
	Super Superuser
	// Sync, when set, is told every new secret (the live dynamic-security
	// sync, --mosquitto-dynsec).
	Sync   *mosquittosync.Syncer
	Logger *slog.Logger
}

// Exporter renders the registry for Mosquitto 2 (docs/security.md, "On an
// external broker"): the password and ACL files, the dynamic-security
// plugin's file, and the clients the live sync keeps there. A Mosquitto hash
// can only be computed from a plain secret, so SecretIssued records one for
// each secret the controller creates (its Config.SecretIssued hook).
type Exporter struct{ cfg ExporterConfig }

// NewExporter returns an Exporter; cfg.Sync may be set later with SetSync.
func NewExporter(cfg ExporterConfig) *Exporter {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Exporter{cfg: cfg}
}

// SecretIssued records the Mosquitto hash of a new secret (the only moment
// the plaintext is known) and hands the secret to the live sync, if it runs.
// A failure to record is logged: rotating the credential records it again.
func (e *Exporter) SecretIssued(ctx context.Context, username, secret string) {
	h, err := mosquittoexport.Hash(secret)
	if err == nil {
		err = e.cfg.Store.PutExportHash(ctx, fleet.ExportHash{Username: username, SecretHash: broker.HashSecret(secret), Mosquitto: h})
	}
	if err != nil {
		e.cfg.Logger.Warn("mosquitto hash not recorded; rotate the credential to export it", "username", username, "error", err)
	}
	if e.cfg.Sync != nil {
		e.cfg.Sync.SetSecret(username, mosquittoexport.Fingerprint(broker.HashSecret(secret), 0), secret)
	}
}

// ExportMosquitto renders the registry's and the local accounts with the
// hashes recorded for their current secrets, plus the controller's account
// on an external broker (GET /v1/export/mosquitto).
func (e *Exporter) ExportMosquitto(ctx context.Context) (passwordFile, aclFile []byte, skipped []string, err error) {
	accts, hashes, supers, err := e.exportInputs(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	files, err := mosquittoexport.Render(accts, hashes, supers...)
	if err != nil {
		return nil, nil, nil, err
	}
	return files.PasswordFile, files.ACLFile, files.Skipped, nil
}

// ExportMosquittoDynSec renders the accounts of ExportMosquitto plus one
// skill account per skill the controller knows each device to have, as
// Mosquitto's dynamic-security config (GET /v1/export/mosquitto/dynsec).
// The skill list is a snapshot: export again when skills change.
func (e *Exporter) ExportMosquittoDynSec(ctx context.Context) (file []byte, skipped []string, err error) {
	accts, hashes, supers, err := e.exportInputs(ctx)
	if err != nil {
		return nil, nil, err
	}
	if accts, err = e.withSkills(ctx, accts); err != nil {
		return nil, nil, err
	}
	out, err := mosquittoexport.RenderDynSec(accts, hashes, supers...)
	if err != nil {
		return nil, nil, err
	}
	return out.JSON, out.Skipped, nil
}

// exportInputs gathers what both Mosquitto exports render: the table's
// accounts, the hashes recorded for their current secrets (computed now for
// an account whose secret is a local credential's, on disk: the live sync
// gives those their plain password by the same rule), and the controller's
// account on an external broker. An account without either is still
// listed: the renderers skip it and say why.
func (e *Exporter) exportInputs(ctx context.Context) ([]broker.Account, map[string]string, []mosquittoexport.Superuser, error) {
	accts, err := e.cfg.Accounts(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	recorded, err := e.cfg.Store.ExportHashes(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	local := e.localSecrets()
	hashes := map[string]string{}
	for _, a := range accts {
		switch h, ok := recorded[a.Username]; {
		case ok && h.SecretHash == a.SecretHash:
			hashes[a.Username] = h.Mosquitto
		case local[a.Username] != "" && broker.HashSecret(local[a.Username]) == a.SecretHash:
			if hashes[a.Username], err = mosquittoexport.Hash(local[a.Username]); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	var supers []mosquittoexport.Superuser
	if s := e.cfg.Super; s.Username != "" && s.Password != "" {
		h, err := mosquittoexport.Hash(s.Password)
		if err != nil {
			return nil, nil, nil, err
		}
		supers = append(supers, mosquittoexport.Superuser{Username: s.Username, Hash: h})
	}
	return accts, hashes, supers, nil
}

func (e *Exporter) localSecrets() map[string]string {
	out := map[string]string{}
	for _, c := range e.cfg.Local {
		out[c.Username] = c.Password
	}
	return out
}

// withSkills adds to accts one skill account per skill the controller
// knows each of its devices to have (knownSkills), as the broker derives it
// from its device's account, grants included. The dynamic-security export
// and the live sync (dynsec.go) both list these.
func (e *Exporter) withSkills(ctx context.Context, accts []broker.Account) ([]broker.Account, error) {
	skills, err := knownSkills(ctx, e.cfg.Store)
	if err != nil {
		return nil, err
	}
	for _, a := range slices.Clone(accts) {
		if a.Role != broker.RoleDevice {
			continue
		}
		for _, s := range skills[a.Device] {
			accts = append(accts, broker.SkillAccount(a.Device, s, a.SkillGrants[s]...))
		}
	}
	return accts, nil
}

// knownSkills lists, per device, the skills the controller knows of: those
// its assignments install there (the desired document's skills), those an
// open install rollout will install there (a rollout puts its assignment only
// when a device's execution starts, so an export taken before the devices
// come online must know them from the rollout), and those the device last
// reported; sorted.
func knownSkills(ctx context.Context, st ExportStore) (map[string][]string, error) {
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
		if rep, err := state.ParseSkills(d.Reported); err == nil {
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
func pendingInstalls(ctx context.Context, st ExportStore) (map[string][]string, error) {
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
