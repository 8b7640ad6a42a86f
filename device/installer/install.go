package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/atomicfile"
	"github.com/chorus-edge/chorus/gateway/desired"
)

// Staging names: CleanStaging removes anything in StagingDir that is not a
// partial download, so these only need to be distinct.
const (
	unpackPrefix = "unpack-"
	asidePrefix  = "old-"
)

// install downloads, checks and places one skill. Until the final rename
// nothing in the installed root changes; on error the staging tree is
// removed (the download is kept only if it may be resumed).
func (in *Installer) install(ctx context.Context, st *state, id string, want desired.Skill) error {
	part, err := in.download(ctx, want)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(in.cfg.StagingDir, unpackPrefix+id+"-")
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, id)
	if err := unpackFile(part, dir, in.cfg.Limits); err != nil {
		os.Remove(part) // verified but unusable: a retry must not reuse it blindly
		return err
	}
	if err := in.validate(tmp, id, want); err != nil {
		os.Remove(part)
		return err
	}
	settings, sum, err := settingsFile(want.Settings)
	if err != nil {
		return err
	}
	if settings != nil {
		if err := in.writeSettings(id, settings); err != nil {
			return err
		}
	}
	if err := in.claim(st, id); err != nil {
		return err
	}
	if err := in.place(dir, id); err != nil {
		return err
	}
	st.Skills[id] = record{Version: want.Version, SHA256: want.SHA256, Settings: sum}
	if err := in.save(st); err != nil {
		return err
	}
	os.Remove(part)
	in.log.Info("skill installed", "skill_id", id, "version", want.Version, "sha256", want.SHA256)
	in.emit(ctx, TypeInstallComplete, map[string]any{"skill_id": id, "version": want.Version})
	return nil
}

func unpackFile(path, dir string, lim artifact.Limits) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return artifact.Unpack(f, dir, lim)
}

// validate runs discovery over the staging root: the archive must hold
// exactly one valid skill, whose id is the desired key (SKILL_MANAGER §1).
func (in *Installer) validate(root, id string, want desired.Skill) error {
	cat, err := discovery.Discover(discovery.Config{Installed: root})
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if p := cat.Problems(); len(p) > 0 {
		return fmt.Errorf("validate: invalid skill archive: %s", p[0])
	}
	entries := cat.Entries()
	switch {
	case len(entries) != 1:
		return fmt.Errorf("validate: archive holds %d skills, want exactly one (%s)", len(entries), id)
	case entries[0].ID != id:
		return fmt.Errorf("validate: archive holds skill %q, want %q", entries[0].ID, id)
	case !entries[0].Valid:
		return fmt.Errorf("validate: invalid skill %s: %s", id, entries[0].Invalid)
	}
	if v := entries[0].Version; v != want.Version {
		// The sha256 pins the content; a version label that disagrees is
		// worth a warning, not a refusal.
		in.log.Warn("skill declares another version than desired", "skill_id", id, "declared", v, "desired", want.Version)
	}
	return nil
}

// claim records id as managed before its directory first appears in the
// installed root, so a crash after the rename never leaves a skill the
// installer wrote but does not own. An existing record keeps its content
// fields: a crash before the final save then reinstalls.
func (in *Installer) claim(st *state, id string) error {
	if _, ok := st.Skills[id]; ok {
		return nil
	}
	st.Skills[id] = record{}
	return in.save(st)
}

// place renames the validated tree to <InstalledRoot>/<id>. An existing
// version is renamed aside first and removed after; if the new one cannot
// be renamed in, the old one is put back.
func (in *Installer) place(dir, id string) error {
	final := filepath.Join(in.cfg.InstalledRoot, id)
	aside, err := in.moveAside(final, id)
	if err != nil {
		return err
	}
	if err := os.Rename(dir, final); err != nil {
		if aside != "" {
			if rerr := os.Rename(aside, final); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restore previous version: %w", rerr))
			}
		}
		return fmt.Errorf("rename into installed root: %w", err)
	}
	if err := atomicfile.SyncDir(in.cfg.InstalledRoot); err != nil {
		in.log.Warn("sync installed root", "err", err)
	}
	if aside != "" {
		if err := os.RemoveAll(filepath.Dir(aside)); err != nil {
			in.log.Warn("remove previous version", "dir", aside, "err", err)
		}
	}
	return nil
}

// moveAside renames path, if it exists, to <fresh staging dir>/<id> and
// returns that name ("" when path does not exist). The caller removes the
// fresh directory; CleanStaging does if it cannot.
func (in *Installer) moveAside(path, id string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	tmp, err := os.MkdirTemp(in.cfg.StagingDir, asidePrefix+id+"-")
	if err != nil {
		return "", fmt.Errorf("staging: %w", err)
	}
	aside := filepath.Join(tmp, id)
	if err := os.Rename(path, aside); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("move %s aside: %w", path, err)
	}
	return aside, nil
}
