package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
)

// MaxDevicePackages caps the skills one device request names.
const MaxDevicePackages = 32

// DeviceActor is the audit log's actor for a device acting on its own
// assignments.
func DeviceActor(device string) string { return "device:" + device }

// RequestSkills is a device asking for its own skills (SKILL_MANAGER §10:
// an OVOS-INSTALL-1 request the agent received on its bus). Each package
// ("id" or "id@version") is resolved in the catalog like `chorus fleet
// install` resolves its argument; an install pins the version it resolved
// (the latest when none is named). Every package is resolved before anything
// is put, so an unknown one changes nothing. Then a device-level install or
// uninstall assignment of each is put for device, and device only; an
// install keeps the settings of the device's existing assignment, as a
// rollout's execution does. It returns the desired document that holds (or
// no longer holds) those skills: the agent waits until it has applied that
// version.
//
// device is the authenticated caller: the API passes the Basic auth user,
// never a value from the request body.
func (c *Controller) RequestSkills(ctx context.Context, device string, action fleet.AssignmentAction, packages []string) (fleet.Desired, error) {
	if action != fleet.AssignInstall && action != fleet.AssignUninstall {
		return fleet.Desired{}, fleet.Errorf(fleet.EINVALID, "action %q: want install or uninstall", action)
	}
	if err := c.enrolled(ctx, device); err != nil {
		return fleet.Desired{}, err
	}
	as, err := c.deviceAssignments(ctx, device, action, packages)
	if err != nil {
		return fleet.Desired{}, err
	}
	names := make([]string, 0, len(as))
	for _, a := range as {
		if err := c.store.PutAssignment(ctx, a); err != nil {
			return fleet.Desired{}, fmt.Errorf("%s %s on %s: %w", action, a.SkillID, device, err)
		}
		names = append(names, skillRef(a))
	}
	doc, err := c.store.DesiredFor(ctx, device)
	if err != nil {
		return fleet.Desired{}, fmt.Errorf("%s on %s: desired: %w", action, device, err)
	}
	c.audit(ctx, DeviceActor(device), "device.skills."+string(action), "device/"+device,
		map[string]any{"skills": names, "desired_version": doc.Version})
	c.queue.Add(device) // publishes the document
	return doc, nil
}

// enrolled refuses a device that authenticated but is not in the registry
// (removed a moment ago): a state that forbids the request, not an unknown skill.
func (c *Controller) enrolled(ctx context.Context, device string) error {
	_, err := c.store.GetDevice(ctx, device)
	if fleet.ErrorCode(err) == fleet.ENOTFOUND {
		return fleet.Errorf(fleet.ECONFLICT, "device %s is not in the fleet registry", device)
	}
	return err
}

// deviceAssignments resolves every package into the assignment to put.
func (c *Controller) deviceAssignments(ctx context.Context, device string, action fleet.AssignmentAction, packages []string) ([]*fleet.Assignment, error) {
	switch {
	case len(packages) == 0:
		return nil, fleet.Errorf(fleet.EINVALID, "packages: name at least one skill")
	case len(packages) > MaxDevicePackages:
		return nil, fleet.Errorf(fleet.EINVALID, "packages: at most %d skills per request", MaxDevicePackages)
	}
	out := make([]*fleet.Assignment, 0, len(packages))
	seen := map[string]bool{}
	for _, p := range packages {
		v, err := c.resolvePackage(ctx, p, action == fleet.AssignInstall)
		if err != nil {
			return nil, err
		}
		if seen[v.SkillID] {
			continue
		}
		seen[v.SkillID] = true
		a := &fleet.Assignment{SkillID: v.SkillID, Target: fleet.DeviceTarget(device), Action: action}
		if action == fleet.AssignInstall {
			a.Version = v.Version
			if err := c.keepSettings(ctx, a); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// resolvePackage resolves "id" or "id@version". The version matters only
// to an install; an uninstall removes whatever version is installed.
func (c *Controller) resolvePackage(ctx context.Context, pkg string, pin bool) (*fleet.SkillVersion, error) {
	name, version, hasVersion, err := parsePackage(pkg)
	if err != nil {
		return nil, err
	}
	v, err := c.Resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	if !pin || !hasVersion {
		return v, nil
	}
	if err := fleet.ValidVersion(version); err != nil {
		return nil, fleet.Errorf(fleet.EINVALID, "package %q: %v", pkg, err)
	}
	return c.store.GetVersion(ctx, v.SkillID, version)
}

// keepSettings copies the settings of the device's existing install or
// configure assignment of the skill into a.
func (c *Controller) keepSettings(ctx context.Context, a *fleet.Assignment) error {
	old, err := c.store.GetAssignment(ctx, a.SkillID, a.Target)
	switch {
	case err == nil && old.Action != fleet.AssignUninstall:
		a.Settings = old.Settings
	case err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND:
		return err
	}
	return nil
}

func skillRef(a *fleet.Assignment) string {
	if a.Version == "" {
		return a.SkillID
	}
	return a.SkillID + "@" + a.Version
}

// maxPackage caps one package name of a device request (a skill id is at
// most 64 characters; the rest is room for a version and a fuzzy name).
const maxPackage = 256

// parsePackage splits a device request's package, "id" or "id@version",
// around surrounding space.
func parsePackage(pkg string) (name, version string, hasVersion bool, err error) {
	if len(pkg) > maxPackage {
		return "", "", false, fleet.Errorf(fleet.EINVALID, "package %q…: longer than %d bytes", truncate(pkg, 32), maxPackage)
	}
	name, version, hasVersion = strings.Cut(strings.TrimSpace(pkg), "@")
	if name == "" || (hasVersion && version == "") {
		return "", "", false, fleet.Errorf(fleet.EINVALID, "package %q: want a skill id or id@version", pkg)
	}
	return name, version, hasVersion, nil
}
