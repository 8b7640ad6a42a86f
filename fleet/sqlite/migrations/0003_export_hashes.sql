-- Password hashes in an external broker's format (docs/security.md, external
-- brokers), computed when the plain secret was known (device add/rotate,
-- integration and operator add). secret_hash is the account's SecretHash at
-- that moment: an entry whose account has since changed its secret is stale.
CREATE TABLE export_hashes (
	username    TEXT    PRIMARY KEY,
	secret_hash TEXT    NOT NULL,
	mosquitto   TEXT    NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;
