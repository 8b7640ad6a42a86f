package agentbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// OVOSConfig configures RunOVOS, `chorus bench agent --ovos-skills N`:
// Skills runtime ovos skills (MakeOVOSSkills' hello skill) under Launcher,
// one process each or, with Shared, in one host process. Launcher and
// Agent are required.
type OVOSConfig struct {
	Skills int
	Shared bool // skills.ovos.shared ["*"]
	// Launcher is the ovos-skill-launcher (the satellite's, or
	// device/ovosrt/standin/ovos-skill-launcher); RunOVOS copies it where
	// every skill uid can reach it.
	Launcher string
	Idle     time.Duration // wait after loaded before reading the memory
	Agent    AgentCommand
	Progress func(format string, args ...any)
	Logger   *slog.Logger
}

// OVOSReport is `chorus bench agent --ovos-skills N --json`.
type OVOSReport struct {
	Mode           string  `json:"mode"` // process or shared
	Launcher       string  `json:"launcher"`
	Skills         int     `json:"skills"`
	StartToLoaded  float64 `json:"start_to_loaded_ms"`
	PythonProcs    int     `json:"python_processes"`
	PythonRSSMiB   float64 `json:"python_vm_rss_mib"`
	RSSPerSkillMiB float64 `json:"vm_rss_per_skill_mib"`
	AgentRSSMiB    float64 `json:"agent_vm_rss_mib"`
	Load           string  `json:"machine_load"`
	Notes          []string
}

// errNoLauncher is RunOVOS's answer to an OVOSConfig without Launcher.
var errNoLauncher = errors.New("agentbench: no OVOS launcher: the satellite's ovos-skill-launcher, or device/ovosrt/standin/ovos-skill-launcher")

// RunOVOS runs `chorus agent` with cfg.Skills runtime ovos skills and
// measures the time from the agent's exec to every skill reported loaded
// (by its launcher's own mycroft.skills.loaded) and the launchers' memory
// after cfg.Idle.
func RunOVOS(ctx context.Context, cfg OVOSConfig) (OVOSReport, error) {
	c := Config{Progress: cfg.Progress, Logger: cfg.Logger}
	c.setDefaults()
	switch {
	case cfg.Agent == nil:
		return OVOSReport{}, errNoAgent
	case cfg.Launcher == "":
		return OVOSReport{}, errNoLauncher
	}
	dir, err := tempDir(0o755) // skills under their own uids reach their code
	if err != nil {
		return OVOSReport{}, err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "skills")
	if _, err := MakeOVOSSkills(root, cfg.Skills); err != nil {
		return OVOSReport{}, fmt.Errorf("write %d OVOS skills: %w", cfg.Skills, err)
	}
	agentCfg, err := ovosAgentConfig(dir, cfg)
	if err != nil {
		return OVOSReport{}, err
	}
	rep := OVOSReport{Mode: "process", Launcher: cfg.Launcher, Skills: cfg.Skills, Load: LoadAvg()}
	if cfg.Shared {
		rep.Mode = "shared"
	}
	r, err := startAgent(ctx, agentSetup{dir: dir, skills: root, device: "bench-ovos", want: cfg.Skills,
		config: agentCfg, wsListen: "127.0.0.1:0", agent: cfg.Agent, logger: c.Logger})
	if err != nil {
		return OVOSReport{}, err
	}
	defer r.close()
	d, err := r.ready(ctx, fmt.Sprintf("%d OVOS skills", cfg.Skills))
	if err != nil {
		return OVOSReport{}, err
	}
	rep.StartToLoaded = ms(d)
	c.Progress("%d OVOS skills loaded (%s) after %.0f ms", cfg.Skills, rep.Mode, rep.StartToLoaded)
	if err := idle(ctx, cfg.Idle); err != nil { // let the launchers settle before the memory reading
		return OVOSReport{}, err
	}
	readOVOSMemory(r.child.Process.Pid, &rep)
	return rep, nil
}

// ovosAgentConfig copies the launcher into dir, where every skill uid can
// reach it (the launcher's own interpreter, named by its #! line, must be
// reachable too), and returns the agent's config.json naming it.
func ovosAgentConfig(dir string, cfg OVOSConfig) ([]byte, error) {
	code, err := os.ReadFile(cfg.Launcher)
	if err != nil {
		return nil, fmt.Errorf("read the OVOS launcher: %w", err)
	}
	launcher := filepath.Join(dir, "ovos-skill-launcher")
	if err := os.WriteFile(launcher, code, 0o755); err != nil {
		return nil, fmt.Errorf("copy the OVOS launcher: %w", err)
	}
	shared := []string{}
	if cfg.Shared {
		shared = []string{"*"}
	}
	return json.Marshal(map[string]any{
		"connectivity": map[string]any{"phal_timeout": 0},
		"skills":       map[string]any{"ovos": map[string]any{"launcher": launcher, "shared": shared}},
	})
}

// readOVOSMemory fills the launchers' and the agent's memory.
func readOVOSMemory(pid int, rep *OVOSReport) {
	procs, kib := ChildrenMemory(pid)
	rep.PythonProcs, rep.PythonRSSMiB = procs, float64(kib)/1024
	if rep.Skills > 0 {
		rep.RSSPerSkillMiB = rep.PythonRSSMiB / float64(rep.Skills)
	}
	if m, err := ProcMemory(pid); err == nil {
		rep.AgentRSSMiB = float64(m.RSSKiB) / 1024
	}
	rep.Notes = append(rep.Notes,
		"start_to_loaded: exec of `chorus agent` → the retained skills report lists every skill loaded, each by its launcher's own mycroft.skills.loaded (after mycroft.ready; phal_timeout 0)",
		"python_vm_rss: VmRSS summed over the agent's child processes (the launchers, or the one shared host); shared pages (the interpreter, libraries) count once per process")
}
