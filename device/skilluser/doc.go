// Package skilluser gives every skill its own Unix account: a uid and a gid
// from a reserved range, allocated and persisted by the agent (as systemd's
// DynamicUser does), with no /etc/passwd entry (ARCHITECTURE.md §6: "skill
// processes run under their own uid, unable to read the agent's credentials
// or signal it"; docs/security.md, "Skill isolation").
//
// Guarantees, in one place:
//   - A skill id keeps its uid for as long as the state file lives; a uid is
//     never handed to a second skill, so nothing one skill left behind (a file
//     in /tmp, a process) ever belongs to another.
//   - gid = uid, and a skill is in no supplementary group.
//   - The range holds no account of /etc/passwd or /etc/group and no
//     subordinate range of /etc/subuid or /etc/subgid (Open refuses one that
//     does), and while Accounts is open no other agent on this host uses the
//     same range (Open refuses it).
//   - Account prepares the skill's writable state: its home (owner the skill,
//     0700) and its settings directory (owner the skill, group the agent,
//     0770, so the agent can replace settings.json and watch it).
//   - Sweep kills every process running under a uid of the range: a starting
//     agent reaps whatever a previous run left behind.
package skilluser
