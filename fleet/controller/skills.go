package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// PublishSkill validates and publishes a skill archive (from `chorus skill
// pack`): it is written to a temporary file with a size cap while hashed,
// unpacked to a temporary directory within gateway/artifact's limits,
// checked by ValidateSkill, stored as ArtifactDir/<sha256> and added to the
// catalog. Publishing identical content again returns the stored version;
// the same version with other content is a conflict. An invalid archive is
// ErrInvalid with the reason and changes nothing.
func (c *Controller) PublishSkill(ctx context.Context, actor string, archive io.Reader) (*fleet.SkillVersion, error) {
	if c.cfg.ValidateSkill == nil {
		return nil, errors.New("publish skill: no ValidateSkill configured")
	}
	if err := os.MkdirAll(c.cfg.ArtifactDir, 0o755); err != nil {
		return nil, fmt.Errorf("publish skill: %w", err)
	}
	tmp, sum, size, err := c.receive(archive)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp) // gone after the rename; removed on any failure
	info, err := c.inspect(tmp)
	if err != nil {
		return nil, err
	}
	v := &fleet.SkillVersion{SkillID: info.ID, Version: info.Version, SHA256: sum, Size: size,
		Title: info.Title, Description: info.Description, Requirements: info.Requirements}
	if v.Requirements == nil {
		v.Requirements = []string{}
	}
	if v.Manifest, err = json.Marshal(map[string]any{"id": info.ID, "version": info.Version, "title": info.Title,
		"description": info.Description, "requirements": v.Requirements}); err != nil {
		return nil, err
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if old, err := c.store.GetVersion(ctx, v.SkillID, v.Version); err == nil && old.SHA256 != v.SHA256 {
		return nil, fleet.Errorf(fleet.ECONFLICT, "skill %s version %s is already published with sha256 %s; publish a new version",
			v.SkillID, v.Version, old.SHA256)
	}
	if err := atomicfile.Commit(tmp, c.artifactPath(sum), 0o644); err != nil {
		return nil, fmt.Errorf("publish skill: store artifact: %w", err)
	}
	out, err := c.store.PublishVersion(ctx, v)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "skill.publish", "skill/"+out.SkillID, map[string]any{"version": out.Version, "sha256": out.SHA256, "size": out.Size})
	c.haCatalogChanged(ctx)
	return out, nil
}

// receive copies the archive to a temporary file in ArtifactDir (the
// filesystem it is renamed on), hashing it, refusing more than MaxArchive bytes.
func (c *Controller) receive(r io.Reader) (path, sum string, size int64, err error) {
	f, err := os.CreateTemp(c.cfg.ArtifactDir, ".upload-*")
	if err != nil {
		return "", "", 0, fmt.Errorf("publish skill: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("publish skill: %w", cerr)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, c.cfg.MaxArchive+1))
	switch {
	case err != nil:
		return "", "", 0, fmt.Errorf("publish skill: read archive: %w", err)
	case n > c.cfg.MaxArchive:
		return "", "", 0, fleet.Errorf(fleet.EINVALID, "skill archive: more than %d bytes", c.cfg.MaxArchive)
	case n == 0:
		return "", "", 0, fleet.Errorf(fleet.EINVALID, "skill archive: empty")
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil)), n, nil
}

// inspect unpacks the archive into a temporary directory and validates it.
// The skill directory is named "skill"; ValidateSkill should insist on a
// declared name.
func (c *Controller) inspect(path string) (SkillInfo, error) {
	dir, err := os.MkdirTemp(c.cfg.ArtifactDir, ".unpack-*")
	if err != nil {
		return SkillInfo{}, fmt.Errorf("publish skill: %w", err)
	}
	defer os.RemoveAll(dir)
	f, err := os.Open(path)
	if err != nil {
		return SkillInfo{}, fmt.Errorf("publish skill: %w", err)
	}
	defer f.Close()
	skillDir := filepath.Join(dir, "skill")
	if err := artifact.Unpack(f, skillDir, artifact.Limits{}); err != nil {
		return SkillInfo{}, fleet.Errorf(fleet.EINVALID, "skill archive refused: %v", err)
	}
	info, err := c.cfg.ValidateSkill(skillDir)
	if err != nil {
		return SkillInfo{}, fleet.Errorf(fleet.EINVALID, "invalid skill: %v", err)
	}
	if err := fleet.ValidSkillID(info.ID); err != nil {
		return SkillInfo{}, fleet.Errorf(fleet.EINVALID, "invalid skill: %v", err)
	}
	if err := fleet.ValidVersion(info.Version); err != nil {
		return SkillInfo{}, fleet.Errorf(fleet.EINVALID, "invalid skill %s: %v", info.ID, err)
	}
	return info, nil
}

func (c *Controller) artifactPath(sum string) string { return filepath.Join(c.cfg.ArtifactDir, sum) }

// OpenArtifact opens a published archive by sha256 for the download
// handler, for device: only an archive its current desired document names,
// or the one this controller published before it (a download begun just
// before a new document still completes), is served; any other is not
// found, whether it exists or not (issue 16 §7; docs/api.md). What a device
// may install is its desired document, and skills can carry private
// configuration or code meant for some devices only.
func (c *Controller) OpenArtifact(ctx context.Context, device, sum string) (*os.File, error) {
	if err := fleet.ValidSHA256(sum); err != nil {
		return nil, err
	}
	if err := c.artifactFor(ctx, device, sum); err != nil {
		return nil, err
	}
	if _, err := c.store.ArtifactBySHA256(ctx, sum); err != nil {
		return nil, err
	}
	f, err := os.Open(c.artifactPath(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fleet.Errorf(fleet.ENOTFOUND, "artifact %s: file missing from the artifact store", sum)
	}
	return f, err
}

// ListSkills returns the latest version of every skill.
func (c *Controller) ListSkills(ctx context.Context) ([]*fleet.SkillVersion, error) {
	return c.store.ListSkills(ctx)
}

// GetSkill returns a skill's latest version and all its versions.
func (c *Controller) GetSkill(ctx context.Context, id string) (*fleet.SkillVersion, []*fleet.SkillVersion, error) {
	latest, err := c.store.LatestVersion(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	all, err := c.store.ListVersions(ctx, id)
	return latest, all, err
}

// SetSkillConfig sets the skill's settings for a target (a configure
// assignment; on a target that installs the skill, the install's settings).
func (c *Controller) SetSkillConfig(ctx context.Context, actor, skill string, t fleet.Target, settings json.RawMessage) (*fleet.Assignment, error) {
	a := &fleet.Assignment{SkillID: skill, Target: t, Action: fleet.AssignConfigure, Settings: settings}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	old, err := c.store.GetAssignment(ctx, skill, t)
	switch {
	case err == nil && old.Action == fleet.AssignInstall:
		a.Action, a.Version = fleet.AssignInstall, old.Version
	case err == nil && old.Action == fleet.AssignUninstall:
		return nil, fleet.Errorf(fleet.ECONFLICT, "%s is uninstalled on %s: install it before configuring it", skill, t)
	case err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND:
		return nil, err
	}
	if err := c.store.PutAssignment(ctx, a); err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "skill.config", "skill/"+skill, map[string]any{"target": t.String()})
	c.requeueTarget(ctx, t)
	return a, nil
}

// requeueTarget reconciles every device a target selects.
func (c *Controller) requeueTarget(ctx context.Context, t fleet.Target) {
	if t.Kind == fleet.TargetDevice {
		c.queue.Add(t.Value)
		return
	}
	f := fleet.DeviceFilter{}
	if t.Kind == fleet.TargetTag {
		f.Tag = t.Value
	}
	ids, err := c.store.ListDeviceIDs(ctx, f)
	if err != nil {
		c.log.Warn("list devices to reconcile", "target", t.String(), "error", err)
		return
	}
	for _, id := range ids {
		c.queue.Add(id)
	}
}

// artifactFor reports, as not found, an archive neither device's current
// desired document nor the one published before it names.
func (c *Controller) artifactFor(ctx context.Context, device, sum string) error {
	doc, err := c.store.DesiredFor(ctx, device)
	if err != nil {
		return fmt.Errorf("artifact %s for device %s: %w", sum, device, err)
	}
	if slices.Contains(artifactsOf(doc), sum) {
		return nil
	}
	c.pubMu.Lock()
	prev := c.published[device].prev
	c.pubMu.Unlock()
	if slices.Contains(prev, sum) {
		return nil
	}
	return fleet.Errorf(fleet.ENOTFOUND, "artifact %s is not in device %s's desired document", sum, device)
}

// artifactsOf returns the sha256s a desired document names.
func artifactsOf(doc fleet.Desired) []string {
	out := make([]string, 0, len(doc.Skills))
	for _, s := range doc.Skills {
		out = append(out, s.SHA256)
	}
	return out
}
