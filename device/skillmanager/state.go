package skillmanager

import "github.com/chorus-edge/chorus/gateway/state"

// State is a skill's state in the retained skills topic (SKILL_MANAGER §3);
// the contract is gateway/state's.
type State = state.SkillState

// The skill states, gateway/state's under the manager's names.
const (
	StateWaiting     = state.Waiting
	StateLoading     = state.Loading
	StateLoaded      = state.Loaded
	StateInactive    = state.Inactive
	StateFailed      = state.Failed
	StateBlacklisted = state.Blacklisted
	StateInvalid     = state.Invalid
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
