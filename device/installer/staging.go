package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
	"github.com/chorus-edge/chorus/gateway/desired"
)

// removeUndesired removes every managed skill doc no longer names, then
// emits one ovos.skills.uninstall.complete {} if it removed any, so the
// skill manager unloads what is gone (SKILL_MANAGER §6). Each directory
// leaves the installed root by one rename, so the manager never sees a
// half-deleted skill. Settings files are kept, as OVOS keeps them.
func (in *Installer) removeUndesired(ctx context.Context, st *state, doc desired.Doc) error {
	var errs []error
	removed := 0
	for _, id := range st.managed() {
		if _, want := doc.Skills[id]; want {
			continue
		}
		if err := in.uninstall(st, id); err != nil {
			err = fmt.Errorf("uninstall %s: %w", id, err)
			errs = append(errs, err)
			in.failed(ctx, TypeUninstallFailed, id, err)
			continue
		}
		removed++
	}
	if removed > 0 {
		in.emit(ctx, TypeUninstallComplete, map[string]any{})
	}
	return errors.Join(errs...)
}

// uninstall removes one managed skill's directory, then its record.
func (in *Installer) uninstall(st *state, id string) error {
	aside, err := in.moveAside(filepath.Join(in.cfg.InstalledRoot, id), id)
	if err != nil {
		return err
	}
	if aside != "" {
		if err := atomicfile.SyncDir(in.cfg.InstalledRoot); err != nil {
			in.log.Warn("sync installed root", "err", err)
		}
		if err := os.RemoveAll(filepath.Dir(aside)); err != nil {
			in.log.Warn("remove uninstalled skill", "dir", aside, "err", err)
		}
	}
	delete(st.Skills, id)
	if err := in.save(st); err != nil {
		return err
	}
	in.log.Info("skill uninstalled", "skill_id", id)
	return nil
}

// CleanStaging removes what an interrupted install left in StagingDir:
// unpacked trees, previous versions renamed aside, anything unknown. It
// keeps partial downloads (<sha256>.part): they are content-addressed and
// verified before use, so the next Apply resumes them instead of starting
// over; Apply removes those its document no longer names. Call it once at
// start, before the first Apply; it waits for a running pass.
func (in *Installer) CleanStaging(ctx context.Context) error {
	if err := in.acquire(ctx); err != nil {
		return fmt.Errorf("clean staging: %w", err)
	}
	defer in.release()
	entries, err := os.ReadDir(in.cfg.StagingDir)
	if err != nil {
		return fmt.Errorf("clean staging: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if _, ok := partName(e.Name()); ok && e.Type().IsRegular() {
			continue
		}
		in.log.Info("removing staging leftover", "name", e.Name())
		if err := os.RemoveAll(filepath.Join(in.cfg.StagingDir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean staging: %w", err)
	}
	return nil
}

// collectPartials removes partial downloads of artifacts doc does not name.
func (in *Installer) collectPartials(doc desired.Doc) {
	wanted := map[string]bool{}
	for _, s := range doc.Skills {
		wanted[s.SHA256] = true
	}
	entries, err := os.ReadDir(in.cfg.StagingDir)
	if err != nil {
		in.log.Warn("list staging", "err", err)
		return
	}
	for _, e := range entries {
		if sha, ok := partName(e.Name()); ok && !wanted[sha] {
			os.Remove(filepath.Join(in.cfg.StagingDir, e.Name()))
		}
	}
}

// partName reports whether name is a partial download and of which sha256.
func partName(name string) (string, bool) {
	sha, ok := strings.CutSuffix(name, partSuffix)
	return sha, ok && desired.ValidSHA256(sha)
}
