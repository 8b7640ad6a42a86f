//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// Integrations (observers such as Home Assistant), operators (MQTT
// credentials for `chorus bus`) and the audit log.

func (a *app) newFleetIntegrationCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "integration",
		Aliases: []string{"integrations"},
		Short:   "MQTT credentials for observers such as Home Assistant",
	}
	var allow []string
	add := &cobra.Command{
		Use:   "add NAME [--allow TYPE]...",
		Short: "Create an integration; prints its MQTT credentials once",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			res, err := c.AddIntegration(ctx, args[0], allow)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, res)
			}
			return a.printMQTTCredentials("integration", res.Integration.Name, res.Credentials)
		}),
	}
	add.Flags().StringArrayVar(&allow, "allow", nil, "a bus message type it may send (repeatable)")
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List integrations",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			ints, err := c.Integrations(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.IntegrationsResponse{Integrations: fleetList(ints)})
			}
			t := newFleetTable(a.stdout, "NAME", "ALLOW")
			for _, i := range ints {
				t.row(i.Name, strings.Join(i.Allow, ","))
			}
			return t.flush()
		}),
	}
	rm := a.fleetRmCmd(f, "integration", (*fleetclient.Client).RemoveIntegration)
	cmd.AddCommand(add, list, rm)
	return cmd
}

func (a *app) newFleetOperatorCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "operator",
		Aliases: []string{"operators"},
		Short:   "MQTT operator credentials for `chorus bus`",
	}
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Create an operator; prints its MQTT credentials once",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			res, err := c.AddOperator(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, res)
			}
			return a.printMQTTCredentials("operator", res.Operator.Name, res.Credentials)
		}),
	}
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List operators",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			ops, err := c.Operators(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.OperatorsResponse{Operators: fleetList(ops)})
			}
			t := newFleetTable(a.stdout, "NAME")
			for _, o := range ops {
				t.row(o.Name)
			}
			return t.flush()
		}),
	}
	rm := a.fleetRmCmd(f, "operator", (*fleetclient.Client).RemoveOperator)
	cmd.AddCommand(add, list, rm)
	return cmd
}

// fleetRmCmd is `<kind> rm NAME`.
func (a *app) fleetRmCmd(f *fleetFlags, kind string, remove func(*fleetclient.Client, context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove an " + kind + "; its credentials stop working at once",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if err := remove(c, ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s %s removed\n", kind, args[0])
			return nil
		}),
	}
}

func (a *app) printMQTTCredentials(kind, name string, c configs.Credential) error {
	fmt.Fprintf(a.stderr, "%s %s added; its password is shown only once\n", kind, name)
	return fleetKV(a.stdout, "username", c.Username, "password", c.Password)
}

func (a *app) newFleetAuditCmd(f *fleetFlags) *cobra.Command {
	var (
		limit   int
		subject string
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: operator actions and execution transitions",
		Args:  fleetArgs(0),
		RunE: a.fleetRunE(f, func([]string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: must not be negative", limit)
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			entries, err := c.Audit(ctx, limit, subject)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.AuditResponse{Entries: fleetList(entries)})
			}
			t := newFleetTable(a.stdout, "ID", "AT", "ACTOR", "ACTION", "SUBJECT", "DETAIL")
			for _, e := range entries {
				t.row(strconv.FormatInt(e.ID, 10), fleetTime(e.At), e.Actor, e.Action, e.Subject, fleetClip(compactJSON(e.Detail), 80))
			}
			return t.flush()
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many entries (0: the gateway's default)")
	cmd.Flags().StringVar(&subject, "subject", "", "only entries about this subject, e.g. device/kitchen or rollout/7")
	return cmd
}
