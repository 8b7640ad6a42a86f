package configs

import (
	"fmt"
	"strings"
)

// The ready_settings words the manager checks itself; any other entry names
// a skill that must be loaded (the finished-booting skill also waits for
// skill ids).
const (
	ReadySkills         = "skills"          // the skill manager's startup load is done (status ready)
	ReadyNetworkSkills  = "network_skills"  // network skills could load: the network flag is set
	ReadyInternetSkills = "internet_skills" // internet skills could load: the internet flag is set
	ReadyNetwork        = "network"         // the finished-booting skill's spelling of network_skills
	ReadyInternet       = "internet"        // and of internet_skills
)

// ovosServices are ready_settings entries that name another OVOS service
// (ovos-skill-boot-finished is_device_ready: any ProcessStatus service).
// The agent has no trusted way to ask them (any bus client could answer
// mycroft.<service>.is_ready), so it refuses them instead of waiting on an
// answer it could not believe.
var ovosServices = map[string]bool{
	"audio": true, "voice": true, "speech": true, "gui": true, "gui_connected": true,
	"phal": true, "enclosure": true, "pairing": true, "setup": true, "intents": true,
}

// CheckReadySettings reports the first entry of ready_settings the agent
// cannot wait for, naming the fix.
func CheckReadySettings(settings []string) error {
	for _, s := range settings {
		w := strings.TrimSpace(s)
		switch {
		case w == "":
			return fmt.Errorf("ready_settings: empty entry (give %s, %s, %s or a skill id)", ReadySkills, ReadyNetworkSkills, ReadyInternetSkills)
		case ovosServices[strings.ToLower(w)]:
			return fmt.Errorf("ready_settings: %q is an OVOS service whose readiness the agent cannot verify; remove it (the agent waits for %s, %s, %s, %s, %s or skill ids)",
				w, ReadySkills, ReadyNetworkSkills, ReadyInternetSkills, ReadyNetwork, ReadyInternet)
		}
	}
	return nil
}

// absPathOrEmpty accepts "" or an absolute path.
func absPathOrEmpty(p string) error {
	if p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not an absolute path (give the full path, or leave it empty)", p)
	}
	return nil
}

// envNames accepts variable names the agent may pass on: no CHORUS_* (the
// agent's own settings), none the runtime sets itself.
func envNames(names []string) error {
	for _, n := range names {
		if err := envName(n); err != nil {
			return err
		}
	}
	return nil
}

func envMap(env map[string]string) error {
	for k := range env {
		if err := envName(k); err != nil {
			return err
		}
	}
	return nil
}

// ovosOwnEnv are the variables the OVOS runtime sets for each skill.
var ovosOwnEnv = map[string]bool{"HOME": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "XDG_STATE_HOME": true}

func envName(n string) error {
	switch {
	case n == "" || strings.ContainsAny(n, "= \t\n\x00"):
		return fmt.Errorf("%q is not a variable name", n)
	case strings.HasPrefix(n, "CHORUS_"):
		return fmt.Errorf("%q: the agent's own variables are never passed to a launcher; remove it", n)
	case ovosOwnEnv[n]:
		return fmt.Errorf("%q is set by the agent for each skill (its private directories); remove it", n)
	}
	return nil
}
