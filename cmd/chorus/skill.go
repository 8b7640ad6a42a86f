package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/device/skillkit/examples"
)

// newSkillCmd groups what runs inside a skill process.
func (a *app) newSkillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Run skill processes (started by chorus agent)",
	}
	cmd.AddCommand(a.newSkillExampleCmd())
	return cmd
}

// newSkillExampleCmd runs a bundled example skill. The bundled skills'
// run.sh is `exec "$CHORUS_BIN" skill example NAME`, so they need no build
// step; the agent provides the CHORUS_* environment (SKILL_MANAGER §2).
func (a *app) newSkillExampleCmd() *cobra.Command {
	names := examples.Names()
	return &cobra.Command{
		Use:   "example NAME",
		Short: "Run a bundled example skill: " + strings.Join(names, ", "),
		Long: "Run a bundled example skill (" + strings.Join(names, ", ") + ") until SIGTERM.\n" +
			"It reads CHORUS_MQTT_URL, CHORUS_USERNAME, CHORUS_PASSWORD, CHORUS_DEVICE,\n" +
			"CHORUS_SKILL_ID, CHORUS_BUS_PREFIX and CHORUS_SETTINGS, which chorus agent sets.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := skillkit.Config{Getenv: a.getenv, Logger: a.log}
			if err := examples.Run(cmd.Context(), args[0], cfg); err != nil {
				return fmt.Errorf("skill example %s: %w", args[0], err)
			}
			return nil
		},
	}
}
