-- Bridging routes (docs/bridging.md): a satellite's bus relayed to a hub's.
-- Removing either device removes the route.
CREATE TABLE routes (
	satellite           TEXT    PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
	hub                 TEXT    NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
	allow               TEXT    NOT NULL,
	blacklisted_skills  TEXT    NOT NULL,
	blacklisted_intents TEXT    NOT NULL,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	CHECK (satellite <> hub)
) STRICT;

CREATE INDEX routes_hub ON routes (hub);
