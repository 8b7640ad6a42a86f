// Package process runs one skill as a child process of the device agent
// (SKILL_MANAGER §2): the skill's exec target, in its directory, in its own
// process group, with a minimal environment plus the CHORUS_* variables that
// give it its own MQTT credentials.
//
// Guarantees, in one place:
//   - Start re-hashes the exec target first and refuses a target that
//     changed since discovery (SKILL_MANAGER §1, discovery.ErrChanged).
//   - With an Identity the skill runs under that uid and gid only, with no
//     capability in any set and no_new_privs, whatever the agent holds
//     (ExecMain, the `chorus skill-exec` trampoline, drops them before it
//     becomes the skill; docs/security.md, "Skill isolation"). With DropCaps
//     the same happens without a change of uid.
//   - A skill dies with its agent: its parent-death signal is SIGKILL, set
//     again after any change of credentials and checked against a parent
//     that died meanwhile. The kernel sends it when the thread that forked
//     the skill exits; Go ends a thread only when a goroutine exits locked
//     to it, which the agent never does.
//   - The whole process group dies with the skill: when the skill's main
//     process exits, for whatever reason, the rest of its group is sent
//     SIGKILL before the process is reaped, so no orphan outlives it and a
//     recycled process id is never signalled.
//   - With Records, every running skill's group is on disk before Start
//     returns, and ReapOrphans kills what a crashed agent's skills left.
//   - Stop is SIGTERM to the group, then SIGKILL after the grace period (or
//     when its context ends); it returns after the process has exited, is
//     idempotent and safe to call concurrently or after the skill exited.
//   - Every goroutine a Process starts has exited when Done is closed;
//     ExitErr and the complete Tail are final from then on.
package process
