package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Apply brings the device to doc (ARCHITECTURE.md §4). It is level-based:
// it compares doc with the state file and the installed root, and only
// does the difference.
//
//  1. Each desired skill (in id order) not installed at its version and
//     sha256 is downloaded, verified, unpacked, validated and renamed into
//     place, then ovos.skills.install.complete {"skill_id","version"} is
//     emitted; a failure emits ovos.skills.install.failed and the pass goes
//     on with the next skill. A skill whose only change is its settings gets
//     a new settings.json and no event (the settings watcher announces it).
//  2. Managed skills no longer desired are removed, then one
//     ovos.skills.uninstall.complete {} is emitted.
//  3. If nothing failed, the state records doc.Version as applied and
//     OnApplied is called with it and the managed ids.
//
// The error joins every skill's failure. A pass cut short by ctx emits no
// failed events. Leftover partial downloads of artifacts doc no longer
// names are removed at the end of the pass.
func (in *Installer) Apply(ctx context.Context, doc desired.Doc) error {
	if err := doc.Validate(); err != nil {
		return fmt.Errorf("apply desired: %w", err)
	}
	if err := in.acquire(ctx); err != nil {
		return fmt.Errorf("apply desired version %d: %w", doc.Version, err)
	}
	defer in.release()
	st := in.snapshot()
	var errs []error
	for _, id := range doc.IDs() {
		if err := in.reconcile(ctx, &st, id, doc.Skills[id]); err != nil {
			errs = append(errs, err)
			in.failed(ctx, TypeInstallFailed, id, err)
		}
	}
	if err := in.removeUndesired(ctx, &st, doc); err != nil {
		errs = append(errs, err)
	}
	in.collectPartials(doc)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return in.applied(&st, doc.Version)
}

// applied records a fully applied version and reports it.
func (in *Installer) applied(st *state, version int64) error {
	if st.AppliedVersion == nil || *st.AppliedVersion != version {
		st.AppliedVersion = &version
		if err := in.save(st); err != nil {
			return fmt.Errorf("apply desired version %d: %w", version, err)
		}
	}
	if in.cfg.OnApplied != nil {
		in.cfg.OnApplied(version, st.managed())
	}
	return nil
}

// reconcile brings one desired skill to its desired version and settings.
func (in *Installer) reconcile(ctx context.Context, st *state, id string, want desired.Skill) error {
	rec, owned := st.Skills[id]
	present, err := in.present(id)
	if err != nil {
		return fmt.Errorf("install %s: %w", id, err)
	}
	if _, ownsPresent := st.Skills[present]; present != "" && !ownsPresent {
		return fmt.Errorf("install %s: %w: %s exists and was not installed by chorus; it is left alone",
			id, ErrNotManaged, filepath.Join(in.cfg.InstalledRoot, present))
	}
	if present != "" && present != id {
		return fmt.Errorf("install %s: managed skill %s differs only in case; it must be uninstalled first", id, present)
	}
	if owned && present == id && rec.Version == want.Version && rec.SHA256 == want.SHA256 {
		return in.reconcileSettings(st, id, want)
	}
	if err := in.install(ctx, st, id, want); err != nil {
		return fmt.Errorf("install %s %s: %w", id, want.Version, err)
	}
	return nil
}

// present returns the name of the installed root's entry that is id, or
// differs from it only in case (one identity to discovery), "" for none.
func (in *Installer) present(id string) (string, error) {
	entries, err := os.ReadDir(in.cfg.InstalledRoot)
	if err != nil {
		return "", err
	}
	found := ""
	for _, e := range entries {
		if e.Name() == id {
			return id, nil
		}
		if strings.EqualFold(e.Name(), id) {
			found = e.Name()
		}
	}
	return found, nil
}

// reconcileSettings rewrites settings.json when the fleet's settings for an
// installed skill changed. Settings dropped from the document leave the
// file as it is: the fleet stops managing it, the skill keeps its state.
func (in *Installer) reconcileSettings(st *state, id string, want desired.Skill) error {
	data, sum, err := settingsFile(want.Settings)
	if err != nil {
		return fmt.Errorf("settings %s: %w", id, err)
	}
	rec := st.Skills[id]
	if sum == rec.Settings {
		return nil
	}
	if data != nil {
		if err := in.writeSettings(id, data); err != nil {
			return fmt.Errorf("settings %s: %w", id, err)
		}
	}
	rec.Settings = sum
	st.Skills[id] = rec
	if err := in.save(st); err != nil {
		return fmt.Errorf("settings %s: %w", id, err)
	}
	return nil
}

// failed emits a failed event for id with the OVOS-INSTALL-1 vocabulary.
// Nothing is emitted when the pass was cancelled: that is not the skill's
// failure, and the bus is likely going away with it.
func (in *Installer) failed(ctx context.Context, typ, id string, err error) {
	in.log.Warn("skill install failed", "skill_id", id, "err", err)
	if ctx.Err() != nil {
		return
	}
	code := ErrorInstall
	var ue *urlError
	if errors.As(err, &ue) {
		code = ErrorURL
	}
	in.emit(ctx, typ, map[string]any{"error": code, "detail": err.Error(), "skill_id": id})
}

// emit sends one event. A lost event is logged, not returned: the install
// it reports has happened, and the skill manager's next pass finds it.
func (in *Installer) emit(ctx context.Context, typ string, data map[string]any) {
	if err := in.cfg.Bus.Emit(ctx, envelope.New(typ, data)); err != nil {
		in.log.Warn("emit installer event", "type", typ, "err", err)
	}
}
