//go:build !chorus_agent

package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agent"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/gateway/topic"
)

func (a *app) newUpCmd() *cobra.Command {
	var (
		f      serveFlags
		device string
		skills []string
		ws     string
		iso    agentFlags // the skill isolation flags only
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run Chorus on one machine: a gateway on loopback and a local agent with the example skills",
		Long: `up is the embedded default: a gateway on loopback (MQTT 127.0.0.1:1883, HTTP 127.0.0.1:8080)
and one local agent whose bundled skills are configs/skills (the example skills, built into the
binary when that folder is not here). State lives under ./chorus-data; up.json there holds the URLs and
credentials for chorus bus, chorus fleet and any MQTT client.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.ignoreHangup(cmd.Context())
			cfg, err := f.load(cmd, a)
			if err != nil {
				return err
			}
			if device == "" {
				device = hostDeviceID()
			}
			g, err := a.startGateway(cmd.Context(), cfg, device, nil)
			if err != nil {
				return err
			}
			iso.skills, iso.wsListen = skills, ws
			ac, err := a.upAgentConfig(cfg, g.Up(), iso)
			if err == nil {
				err = a.runUp(cmd, g, ac)
			}
			return errors.Join(err, g.Close())
		},
	}
	f.register(cmd, "127.0.0.1:1883", "127.0.0.1:8080")
	cmd.Flags().StringVar(&device, "device", "", "local device id (default: this host's name)")
	cmd.Flags().StringSliceVar(&skills, "skills", nil, "bundled skill root for the local agent (repeatable; default configs/skills)")
	cmd.Flags().StringVar(&ws, "ws-listen", "", "the agent's OVOS websocket drop-in host:port, or off (default 127.0.0.1:8181)")
	iso.registerIsolation(cmd)
	return cmd
}

func (a *app) runUp(cmd *cobra.Command, g *gatewayd.Main, ac agent.Config) error {
	ag, err := agent.Start(cmd.Context(), ac)
	if err != nil {
		if cmd.Context().Err() != nil {
			return nil // stopped while starting: a clean shutdown
		}
		return err
	}
	a.printUp(g.Up(), g.DataDir(), true)
	if addr := ag.WSAddr(); addr != "" {
		a.printf("  OVOS websocket  %s; its route for OVOS services is in %s (run them with XDG_CONFIG_DIRS=%s; docs/ovos.md)\n",
			addr, ac.WSServicesConfig, filepath.Dir(filepath.Dir(ac.WSServicesConfig)))
	}
	a.printf("  skill isolation  %s (docs/security.md)\n", ag.Isolation())
	<-cmd.Context().Done()
	return closeAgent(ag)
}

// upAgentConfig is the local agent's configuration under `chorus up`.
func (a *app) upAgentConfig(cfg configs.Config, up configs.Up, f agentFlags) (agent.Config, error) {
	if len(f.skills) == 0 {
		root, err := exampleSkills(cfg.DataDir)
		if err != nil {
			return agent.Config{}, err
		}
		f.skills = []string{root}
	}
	f.dataDir = cfg.DataDir
	return a.agentConfig(cfg, *up.Agent, f)
}

// exampleSkills returns configs/skills when run from a checkout, else the
// built-in copy extracted into the data dir.
func exampleSkills(dataDir string) (string, error) {
	if st, err := os.Stat(configs.ExampleSkillsDir); err == nil && st.IsDir() {
		return filepath.Abs(configs.ExampleSkillsDir)
	}
	return configs.ExtractExamples(filepath.Join(dataDir, "examples"))
}

// hostDeviceID is the host name as a device id (topic.DeviceIDFrom).
func hostDeviceID() string {
	h, _ := os.Hostname()
	return topic.DeviceIDFrom(h)
}
