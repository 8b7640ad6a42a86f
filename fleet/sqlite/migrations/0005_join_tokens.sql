-- Join tokens and pending enrolments (docs/security.md, "Join tokens").
-- Only the hashes of token and poll secrets are stored. A revoked token is
-- kept (revoked_at set) so `token list` and the audit log can name it.
CREATE TABLE join_tokens (
	id          TEXT    PRIMARY KEY,
	secret_hash TEXT    NOT NULL,
	tags        TEXT    NOT NULL,
	uses        INTEGER NOT NULL,
	used        INTEGER NOT NULL DEFAULT 0,
	approve     INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	revoked_at  INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL
) STRICT;

-- A device waiting for an operator's accept: in no broker table until then.
CREATE TABLE pending_devices (
	id          TEXT    PRIMARY KEY,
	device      TEXT    NOT NULL UNIQUE,
	tags        TEXT    NOT NULL,
	token       TEXT    NOT NULL,
	address     TEXT    NOT NULL,
	secret_hash TEXT    NOT NULL,
	accepted    INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL
) STRICT;
