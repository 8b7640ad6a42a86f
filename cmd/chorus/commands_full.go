//go:build !chorus_agent

package main

import "github.com/spf13/cobra"

// commands are the root's subcommands in the full binary. A build with the
// chorus_agent tag is the agent alone (commands_agent.go).
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.newVersionCmd(),
		a.newGatewayCmd(),
		a.newUpCmd(),
		a.newAgentCmd(),
		a.newBusCmd(),
		a.newSkillCmd(),
		a.newSkillExecCmd(),
		a.newFleetCmd(),
		a.newCertCmd(),
		a.newBenchCmd(),
	}
}
