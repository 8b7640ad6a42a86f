package skillmanager

// Bus message types the manager handles or emits (seeds/000 "Bus Events
// Handled"; ovos-behaviour §1.2-§1.3; SKILL_MANAGER §3-§7).
const (
	// Status (ProcessStatus, ovos-behaviour §1.11).
	TypeIsAlive   = "mycroft.skills.is_alive"
	TypeIsReady   = "mycroft.skills.is_ready"
	TypeAllLoaded = "mycroft.skills.all_loaded"

	// Loading (§4).
	TypeSkillsLoaded   = "mycroft.skills.loaded"          // {"path","id","name"}
	TypeSkillLoaded    = "mycroft.skill.loaded"           // {"skill_id"}
	TypeLoadingFailure = "mycroft.skills.loading_failure" // {"path","id"}
	TypeDetachSkill    = "detach_skill"                   // {"skill_id"}
	TypeSkillReady     = "chorus.skill.ready"             // {"skill_id"}, from the skill
	TypeTrain          = "mycroft.skills.train"
	TypeTrained        = "mycroft.skills.trained"
	TypeInitialized    = "mycroft.skills.initialized"
	TypeIntentsIsReady = "mycroft.intents.is_ready"

	// Connectivity (§5).
	TypeNetworkConnected     = "mycroft.network.connected"
	TypeNetworkDisconnected  = "mycroft.network.disconnected"
	TypeInternetConnected    = "mycroft.internet.connected"
	TypeInternetDisconnected = "mycroft.internet.disconnected"
	TypeGUIAvailable         = "mycroft.gui.available"
	TypeGUIUnavailable       = "mycroft.gui.unavailable"

	// Install, uninstall, rescan (§6).
	TypeSkillsInstallComplete   = "ovos.skills.install.complete"
	TypePipInstallComplete      = "ovos.pip.install.complete"
	TypeSkillsUninstallComplete = "ovos.skills.uninstall.complete"
	TypePipUninstallComplete    = "ovos.pip.uninstall.complete"
	TypeRescan                  = "skillmanager.rescan"

	// Management (§7).
	TypeList       = "skillmanager.list"
	TypeSkillsList = "mycroft.skills.list"
	TypeActivate   = "skillmanager.activate"
	TypeDeactivate = "skillmanager.deactivate"
	TypeKeep       = "skillmanager.keep"
)

// responseType is the type of a .response to t (MSG-1 §5.3).
func responseType(t string) string { return t + ".response" }
