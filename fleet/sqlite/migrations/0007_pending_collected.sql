-- An accepted enrolment is kept once its agent has collected its
-- credentials, until the device is first heard from or the re-collect
-- window ends (docs/fleet.md, Joining): a reply lost on the way to the
-- agent must not strand it. 0 = not collected.
ALTER TABLE pending_devices ADD COLUMN collected_at INTEGER NOT NULL DEFAULT 0;
