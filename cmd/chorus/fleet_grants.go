//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// Skill grants: management types a skill may emit despite the default ban
// (docs/security.md, "Skill grants").

func (a *app) newFleetGrantCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "grant",
		Aliases: []string{"grants"},
		Short:   "Let a skill emit management types it is refused by default (docs/security.md)",
	}
	var g fleet.SkillGrant
	add := &cobra.Command{
		Use:   "add SKILL --allow TYPE... [--device DEVICE]",
		Short: "Grant SKILL the types (replaces its grant on that device, or fleet-wide without --device)",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, func([]string) error {
			if len(g.Allow) == 0 {
				return fmt.Errorf("--allow is required")
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			g.Skill = args[0]
			out, err := c.PutSkillGrant(ctx, g)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, out)
			}
			fmt.Fprintf(a.stdout, "skill %s on %s may emit: %s\n", out.Skill, grantScope(out.Device), strings.Join(out.Allow, ", "))
			return nil
		}),
	}
	add.Flags().StringArrayVar(&g.Allow, "allow", nil, "a restricted type or prefix* pattern (repeatable), e.g. ovos.skills.install*")
	add.Flags().StringVar(&g.Device, "device", "", "only on this device (default: every device)")
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List skill grants",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			gs, err := c.SkillGrants(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.GrantsResponse{Grants: fleetList(gs)})
			}
			t := newFleetTable(a.stdout, "SKILL", "DEVICE", "ALLOW")
			for _, g := range gs {
				t.row(g.Skill, grantScope(g.Device), strings.Join(g.Allow, ","))
			}
			return t.flush()
		}),
	}
	var rmDevice string
	rm := &cobra.Command{
		Use:   "rm SKILL [--device DEVICE]",
		Short: "Remove a skill's grant; the types are refused from its next message",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if err := c.RemoveSkillGrant(ctx, args[0], rmDevice); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "grant of skill %s on %s removed\n", args[0], grantScope(rmDevice))
			return nil
		}),
	}
	rm.Flags().StringVar(&rmDevice, "device", "", "the device-scoped grant (default: the fleet-wide one)")
	cmd.AddCommand(add, list, rm)
	return cmd
}

func grantScope(device string) string {
	if device == "" {
		return "every device"
	}
	return "device " + device
}
