-- 0001: the fleet controller's initial schema.
-- Times are INTEGER Unix nanoseconds (0 = unset); JSON columns are TEXT
-- (NULL = absent). STRICT tables refuse values of the wrong type.

CREATE TABLE devices (
	id              TEXT    PRIMARY KEY,
	secret_hash     TEXT    NOT NULL,
	skill_key       BLOB    NOT NULL,
	key_version     INTEGER NOT NULL DEFAULT 1,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	online          INTEGER NOT NULL DEFAULT 0,
	last_seen       INTEGER NOT NULL DEFAULT 0,
	birth_session   INTEGER NOT NULL DEFAULT 0,
	agent_version   TEXT    NOT NULL DEFAULT '',
	connectivity    TEXT,
	reported        TEXT,
	applied_version INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE device_tags (
	device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
	tag       TEXT NOT NULL,
	PRIMARY KEY (device_id, tag)
) STRICT, WITHOUT ROWID;

CREATE INDEX device_tags_tag ON device_tags (tag, device_id);

-- The last desired document computed for each device. skills is the
-- canonical JSON of Desired.Skills, compared to detect a change.
CREATE TABLE device_desired (
	device_id   TEXT    PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
	version     INTEGER NOT NULL,
	skills      TEXT    NOT NULL,
	computed_at INTEGER NOT NULL
) STRICT;

-- Gateway-wide counters (desired_version: see fleet.AssignmentService).
CREATE TABLE counters (
	name  TEXT    PRIMARY KEY,
	value INTEGER NOT NULL
) STRICT;

CREATE TABLE integrations (
	name        TEXT    PRIMARY KEY,
	secret_hash TEXT    NOT NULL,
	allow       TEXT    NOT NULL DEFAULT '[]',
	created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE operators (
	name        TEXT    PRIMARY KEY,
	secret_hash TEXT    NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;

-- seq orders publications: the latest version of a skill is the one with
-- the largest seq.
CREATE TABLE skill_versions (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	skill_id     TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	sha256       TEXT    NOT NULL,
	size         INTEGER NOT NULL,
	manifest     TEXT,
	title        TEXT    NOT NULL DEFAULT '',
	description  TEXT    NOT NULL DEFAULT '',
	requirements TEXT    NOT NULL DEFAULT '[]',
	published_at INTEGER NOT NULL,
	UNIQUE (skill_id, version)
) STRICT;

CREATE INDEX skill_versions_skill ON skill_versions (skill_id, seq);
CREATE INDEX skill_versions_sha256 ON skill_versions (sha256);

-- target_value is '' for target_kind 'all'. A device assignment has no
-- foreign key (the target is polymorphic); removing a device deletes its
-- assignments in the same transaction.
CREATE TABLE assignments (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	skill_id     TEXT    NOT NULL,
	target_kind  TEXT    NOT NULL CHECK (target_kind IN ('device', 'tag', 'all')),
	target_value TEXT    NOT NULL,
	action       TEXT    NOT NULL CHECK (action IN ('install', 'uninstall', 'configure')),
	version      TEXT    NOT NULL DEFAULT '',
	settings     TEXT,
	seq          INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	UNIQUE (skill_id, target_kind, target_value)
) STRICT;

CREATE INDEX assignments_target ON assignments (target_kind, target_value);

CREATE TABLE rollouts (
	id                    INTEGER PRIMARY KEY AUTOINCREMENT,
	skill_id              TEXT    NOT NULL,
	version               TEXT    NOT NULL DEFAULT '',
	action                TEXT    NOT NULL CHECK (action IN ('install', 'uninstall')),
	targets               TEXT    NOT NULL,
	canary                INTEGER NOT NULL DEFAULT 0,
	max_in_flight         INTEGER NOT NULL DEFAULT 0,
	failure_threshold_pct REAL    NOT NULL DEFAULT 0,
	min_executed          INTEGER NOT NULL DEFAULT 0,
	timeout_ns            INTEGER NOT NULL DEFAULT 0,
	state                 TEXT    NOT NULL,
	reason                TEXT    NOT NULL DEFAULT '',
	created_by            TEXT    NOT NULL DEFAULT '',
	created_at            INTEGER NOT NULL,
	updated_at            INTEGER NOT NULL,
	started_at            INTEGER NOT NULL DEFAULT 0,
	finished_at           INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX rollouts_skill ON rollouts (skill_id, id);
CREATE INDEX rollouts_state ON rollouts (state, id);

-- Executions keep no foreign key to devices: the history of a removed
-- device stays readable (its unfinished executions are canceled).
CREATE TABLE executions (
	rollout_id    INTEGER NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
	device_id     TEXT    NOT NULL,
	state         TEXT    NOT NULL,
	reason        TEXT    NOT NULL DEFAULT '',
	canary        INTEGER NOT NULL DEFAULT 0,
	attempts      INTEGER NOT NULL DEFAULT 0,
	superseded_by INTEGER NOT NULL DEFAULT 0,
	queued_at     INTEGER NOT NULL,
	started_at    INTEGER NOT NULL DEFAULT 0,
	finished_at   INTEGER NOT NULL DEFAULT 0,
	updated_at    INTEGER NOT NULL,
	PRIMARY KEY (rollout_id, device_id)
) STRICT;

CREATE INDEX executions_device ON executions (device_id, state);
CREATE INDEX executions_state ON executions (state, rollout_id);

CREATE TABLE audit (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	at      INTEGER NOT NULL,
	actor   TEXT    NOT NULL,
	action  TEXT    NOT NULL,
	subject TEXT    NOT NULL DEFAULT '',
	detail  TEXT
) STRICT;

CREATE INDEX audit_subject ON audit (subject, id);
