//go:build chorus_agent

package main

import "github.com/spf13/cobra"

// commands are the root's subcommands of the agent-only build (`go build
// -tags chorus_agent`, scripts/build.sh's chorus-agent): the agent and the
// skill launcher it runs itself as, without the gateway's packages, whose
// code and initialisation cost a satellite ~7 MiB of resident pages it never
// uses (docs/benchmarks.md, issue 19).
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.newVersionCmd(),
		a.newAgentCmd(),
		a.newSkillExecCmd(),
	}
}
