-- Skill grants (docs/security.md, "Skill grants"): management and state
-- message types one skill may emit despite the default ban. device is ''
-- for a grant on every device; a device-scoped row goes with its device.
CREATE TABLE skill_grants (
	skill      TEXT    NOT NULL,
	device     TEXT    NOT NULL DEFAULT '',
	allow      TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (skill, device)
) STRICT;
