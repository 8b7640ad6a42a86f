// Package settings owns the skills' settings files on a device
// (SKILL_MANAGER §8): where they live, how the agent writes them, and the
// watcher that turns a change into ovos.skills.settings_changed.
//
// Layout: <root>/<skill_id>/settings.json, one directory per skill.
package settings
