package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strictGroups makes every command group (a command with subcommands and
// no action of its own, such as `chorus fleet` or `chorus bus`) refuse an
// unknown subcommand with an error, a suggestion and a non-zero exit, where
// cobra prints the group's help and exits 0 (it checks only the root's).
// A group run without arguments still prints its help.
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.SuggestionsMinimumDistance = 2
	c.Args = unknownSubcommand
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// unknownSubcommand refuses any argument of a command group, naming the
// closest subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
	}
	return fmt.Errorf("%s (run '%s --help' for the list)", msg, cmd.CommandPath())
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}
