// Package skillmanager is the device agent's skill lifecycle: the Go form of
// the OVOS SkillManager of seeds/000 with the decisions of SKILL_MANAGER.md
// §3-§7 and §9.
//
// A Manager discovers skills (device/discovery), loads each one as its own
// process (a Launcher, in production device/process) in load passes gated on
// connectivity and capabilities, retries failures with backoff, reacts to
// install/uninstall/rescan and the skillmanager.* management events on the
// device bus, answers the status queries, and reports a Snapshot for the
// retained skills and connectivity topics.
//
// Concurrency. One mutex, Manager.mu, owns the skill table (tracked skills,
// reservations of loads in flight, failure bookkeeping, the inactive set,
// connectivity flags and the manager status). Nothing does I/O, touches the
// bus, starts or stops a process or calls back into the agent while holding
// it: decisions are taken under the lock, effects run after it is released
// (seeds/000: "the removal list and the loader instances behind it are taken
// under the same lock, and each shutdown runs outside it"). Bus handlers
// never block the bus's delivery goroutine: anything slow (a load pass, a
// stop, a reply that waits on a load) runs in a goroutine owned by the
// Manager, which Close cancels and waits for. OnChange is called from one
// notifier goroutine, never concurrently, with the latest state (changes
// that happen while it runs are coalesced into the next call).
//
// Loads of one pass are started in discovery order and wait for readiness
// concurrently, so one skill that never becomes ready delays nothing else;
// the pass ends when every load it started has finished.
package skillmanager
