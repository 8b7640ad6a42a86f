//go:build !chorus_agent

package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// completeTimeout bounds the API call behind one completion.
const completeTimeout = 3 * time.Second

// fleetLister lists the ids a completion offers.
type fleetLister func(ctx context.Context, c *fleetclient.Client) ([]string, error)

// wireFleetCompletion lets shell completion (`chorus completion bash`)
// offer the gateway's device, skill and rollout ids as the first argument
// of the commands that take one, and device ids for --device (issue 16 §8).
// The ids come from the same gateway the command would call.
func (a *app) wireFleetCompletion(fleetCmd *cobra.Command, f *fleetFlags) {
	args := map[string]fleetLister{
		"device show": listDevices, "device rm": listDevices, "device tag": listDevices, "device rotate": listDevices,
		"skill show": listSkills, "skill config": listSkills, "install": listSkills, "uninstall": listSkills,
		"grant add": listSkills, "grant rm": listSkills,
		"rollout show": listRollouts, "rollout watch": listRollouts, "rollout pause": listRollouts,
		"rollout resume": listRollouts, "rollout abort": listRollouts,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), fleetCmd.CommandPath()+" ")
		if l, ok := args[path]; ok && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = a.completeIDs(f, l, true)
		}
		if c.Flags().Lookup("device") != nil {
			_ = c.RegisterFlagCompletionFunc("device", a.completeIDs(f, listDevices, false))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(fleetCmd)
}

// completeIDs completes with the ids list returns that start with what
// was typed: a flag's value, or (first) only the first positional
// argument. Any failure (no gateway, no token) completes nothing rather
// than file names.
func (a *app) completeIDs(f *fleetFlags, list fleetLister, first bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if first && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if err := a.applyEnv(cmd); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
		defer cancel()
		ids, err := list(ctx, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, id := range ids {
			if strings.HasPrefix(id, toComplete) {
				out = append(out, id)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func listDevices(ctx context.Context, c *fleetclient.Client) ([]string, error) {
	ds, err := c.Devices(ctx, fleet.DeviceFilter{})
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids, err
}

func listSkills(ctx context.Context, c *fleetclient.Client) ([]string, error) {
	ss, err := c.Skills(ctx)
	ids := make([]string, 0, len(ss))
	for _, s := range ss {
		ids = append(ids, s.SkillID)
	}
	return ids, err
}

func listRollouts(ctx context.Context, c *fleetclient.Client) ([]string, error) {
	rs, err := c.Rollouts(ctx, "")
	ids := make([]string, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, strconv.FormatInt(r.ID, 10))
	}
	return ids, err
}
