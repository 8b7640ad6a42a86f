package skillmanager

// State is a skill's state in the retained skills topic (SKILL_MANAGER §3).
type State string

const (
	StateWaiting     State = "waiting"     // requirements unmet (waiting_for says which), or not yet passed over
	StateLoading     State = "loading"     // started, not ready yet
	StateLoaded      State = "loaded"      // running and ready (active)
	StateInactive    State = "inactive"    // deactivated (skillmanager.deactivate), persisted
	StateFailed      State = "failed"      // last load failed; error, attempts, next_retry
	StateBlacklisted State = "blacklisted" // in skills.blacklisted_skills and not running
	StateInvalid     State = "invalid"     // a SKILL.md directory that cannot load (gate failed, no exec, ...)
)

// Status is the manager's own state: started → alive → ready → stopping
// (SKILL_MANAGER §3; ovos-behaviour §1.11).
type Status string

const (
	StatusStarted  Status = "started"  // New returned
	StatusAlive    Status = "alive"    // Start began: subscriptions up, startup load running
	StatusReady    Status = "ready"    // startup load done, mycroft.skills.initialized sent
	StatusStopping Status = "stopping" // Close began
)

// alive is the answer to mycroft.skills.is_alive: alive or ready, never
// while stopping.
func (s Status) alive() bool { return s == StatusAlive || s == StatusReady }

// ready is the answer to mycroft.skills.is_ready and all_loaded.
func (s Status) ready() bool { return s == StatusReady }
