// Package process runs one skill as a child process of the device agent
// (SKILL_MANAGER §2): the skill's exec target, in its directory, in its own
// process group, with a minimal environment plus the CHORUS_* variables that
// give it its own MQTT credentials.
//
// Guarantees, in one place:
//   - Start re-hashes the exec target first and refuses a target that
//     changed since discovery (SKILL_MANAGER §1, discovery.ErrChanged).
//   - The whole process group dies with the skill: when the skill's main
//     process exits, for whatever reason, the rest of its group is sent
//     SIGKILL before the process is reaped, so no orphan outlives it and a
//     recycled process id is never signalled.
//   - Stop is SIGTERM to the group, then SIGKILL after the grace period (or
//     when its context ends); it returns after the process has exited, is
//     idempotent and safe to call concurrently or after the skill exited.
//   - Every goroutine a Process starts has exited when Done is closed;
//     ExitErr and the complete Tail are final from then on.
package process
