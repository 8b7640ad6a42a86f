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

// Bridging routes: a satellite's utterances answered by a hub device's
// skills (docs/bridging.md).

func (a *app) newFleetRouteCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "route",
		Aliases: []string{"routes"},
		Short:   "Relay satellites' buses to hub devices (docs/bridging.md)",
	}
	var r fleet.Route
	add := &cobra.Command{
		Use:   "add SATELLITE --hub HUB [--allow TYPE]...",
		Short: "Relay SATELLITE's utterances to HUB's skills (replaces an existing route)",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, func([]string) error {
			if r.Hub == "" {
				return fmt.Errorf("--hub is required")
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			r.Satellite = args[0]
			out, err := c.PutRoute(ctx, r)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, out)
			}
			fmt.Fprintf(a.stdout, "route %s -> %s set (allow: %s)\n", out.Satellite, out.Hub, routeAllow(out))
			return nil
		}),
	}
	fl := add.Flags()
	fl.StringVar(&r.Hub, "hub", "", "the device whose skills answer")
	fl.StringArrayVar(&r.Allow, "allow", nil, "a bus message type the satellite may send (repeatable; default: the utterance types)")
	fl.StringArrayVar(&r.BlacklistedSkills, "blacklist-skill", nil, "a skill the satellite's utterances never reach (repeatable)")
	fl.StringArrayVar(&r.BlacklistedIntents, "blacklist-intent", nil, "an intent (skill:intent) they never reach (repeatable)")
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List routes",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			rs, err := c.Routes(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.RoutesResponse{Routes: fleetList(rs)})
			}
			t := newFleetTable(a.stdout, "SATELLITE", "HUB", "ALLOW", "BLACKLISTED")
			for _, r := range rs {
				t.row(r.Satellite, r.Hub, routeAllow(r), strings.Join(append(append([]string{}, r.BlacklistedSkills...), r.BlacklistedIntents...), ","))
			}
			return t.flush()
		}),
	}
	rm := &cobra.Command{
		Use:   "rm SATELLITE",
		Short: "Remove a satellite's route; its skills are deregistered on the hub",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if err := c.RemoveRoute(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "route %s removed\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(add, list, rm)
	return cmd
}

func routeAllow(r fleet.Route) string {
	if len(r.Allow) == 0 {
		return "recognizer_loop:utterance,ovos.utterance.handle"
	}
	return strings.Join(r.Allow, ",")
}
