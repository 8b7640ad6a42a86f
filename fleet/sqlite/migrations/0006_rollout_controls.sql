-- Rollout controls (docs/rollouts.md): an overall deadline after which
-- queued executions end as timed out, and a start rate per minute with an
-- optional exponential ramp (AWS IoT Jobs' maximumPerMinute and
-- exponentialRate). 0 means none, as the older columns do.
ALTER TABLE rollouts ADD COLUMN deadline_ns        INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollouts ADD COLUMN rate_per_min       INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollouts ADD COLUMN ramp_base_per_min  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollouts ADD COLUMN ramp_every_ns      INTEGER NOT NULL DEFAULT 0;
