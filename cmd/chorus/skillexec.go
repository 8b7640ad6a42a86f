package main

import (
	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/process"
)

// newSkillExecCmd is the hidden launcher the agent runs for every skill it
// isolates: it drops to the skill's uid, no_new_privs and no capabilities,
// then becomes the skill (process.ExecMain). Not for people.
func (a *app) newSkillExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:                process.TrampolineCommand + " UID GID AGENT_PID EXEC",
		Short:              "Start a skill under its own uid (run by chorus agent)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return &exitError{code: 126, err: process.ExecMain(args)}
		},
	}
}
