//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// `chorus fleet token ...` and `chorus fleet device pending|accept|reject`:
// join-token enrolment (docs/install.md, docs/security.md "Join tokens").

func (a *app) newFleetTokenCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token",
		Aliases: []string{"tokens"},
		Short:   "Make, list and revoke join tokens for `chorus agent join`",
	}
	cmd.AddCommand(a.newFleetTokenCreateCmd(f), a.newFleetTokenListCmd(f), a.newFleetTokenRevokeCmd(f))
	return cmd
}

func (a *app) newFleetTokenCreateCmd(f *fleetFlags) *cobra.Command {
	var (
		tags    []string
		uses    int
		ttl     time.Duration
		approve bool
	)
	cmd := &cobra.Command{
		Use:   "create [--tag T] [--uses N] [--ttl D] [--approve]",
		Short: "Make a join token; on a satellite, `chorus agent join TOKEN` enrols it",
		Long: "Make a join token: the gateway's URL, a secret and, with TLS, the pin of its certificate, in one\n" +
			"word. On a satellite, `chorus agent join TOKEN` enrols it with the token's tags. Without --approve\n" +
			"each device waits in `chorus fleet device pending` until accepted and has no MQTT access until then.\n" +
			"The token is printed only now; it can enrol --uses devices until --ttl passes, or until revoked.",
		Args: fleetArgs(0),
		RunE: a.fleetRunE(f, func([]string) error {
			if uses < 1 {
				return fmt.Errorf("--uses %d: want 1 or more", uses)
			}
			if ttl < time.Second {
				return fmt.Errorf("--ttl %s: want at least 1s (e.g. 24h)", ttl)
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			out, err := c.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Tags: tags, Uses: uses, TTLSeconds: int64(ttl / time.Second), Approve: approve})
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, out)
			}
			mode := "each device waits for `chorus fleet device accept`"
			if out.Token.Approve {
				mode = "devices are accepted at once"
			}
			fmt.Fprintf(a.stderr, "join token %s: %d use(s), expires %s, %s; shown only now. On a satellite:\n  chorus agent join TOKEN\n",
				out.Token.ID, out.Token.Uses, fleetTime(out.Token.ExpiresAt), mode)
			if tok, err := api.ParseJoinToken(out.Text); err == nil && tok.LocalOnly() {
				fmt.Fprintf(a.stderr, "warning: the token points satellites at %s, which only this machine can reach: give the gateway the address satellites use (its advertised HTTP URL) and make a new token\n", tok.URL)
			} else if err == nil && strings.HasPrefix(tok.URL, "http://") {
				fmt.Fprintf(a.stderr, "warning: %s is plain HTTP: the join and the credentials it returns cross the network in the clear, readable by anyone who can watch it; turn on http.tls (chorus cert, docs/security.md) on a network you do not trust\n", tok.URL)
			}
			fmt.Fprintln(a.stdout, out.Text)
			return nil
		}),
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag every device the token enrols (repeatable)")
	cmd.Flags().IntVar(&uses, "uses", 1, "how many devices the token may enrol")
	cmd.Flags().DurationVar(&ttl, "ttl", fleet.DefaultJoinTokenTTL, "how long the token is valid")
	cmd.Flags().BoolVar(&approve, "approve", false, "give devices MQTT access at once, without an operator's accept")
	return cmd
}

func (a *app) newFleetTokenListCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List join tokens: uses, expiry, revoked",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			ts, err := c.JoinTokens(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.JoinTokensResponse{Tokens: fleetList(ts)})
			}
			t := newFleetTable(a.stdout, "ID", "USED", "EXPIRES", "STATE", "APPROVE", "TAGS")
			now := time.Now()
			for _, tok := range ts {
				t.row(tok.ID, strconv.Itoa(tok.Used)+"/"+strconv.Itoa(tok.Uses), fleetTime(tok.ExpiresAt),
					tok.State(now), fleetYesNo(tok.Approve), strings.Join(tok.Tags, ","))
			}
			return t.flush()
		}),
	}
}

func (a *app) newFleetTokenRevokeCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a join token: it enrols nothing more (waiting devices stay pending)",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			t, err := c.RevokeJoinToken(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.JoinTokenResponse{Token: t})
			}
			fmt.Fprintf(a.stdout, "join token %s revoked\n", t.ID)
			return nil
		}),
	}
}

func (a *app) newFleetDevicePendingCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "pending",
		Short: "List devices that joined with a token and wait for accept or reject",
		Args:  fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			ps, err := c.PendingDevices(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.PendingDevicesResponse{Pending: fleetList(ps)})
			}
			t := newFleetTable(a.stdout, "PENDING", "DEVICE", "FROM", "ASKED", "TOKEN", "STATE", "TAGS")
			for _, p := range ps {
				state := "waiting"
				if p.Accepted {
					state = "accepted, device not yet collected"
				}
				t.row(p.ID, p.DeviceID, p.Address, fleetTime(p.CreatedAt), p.TokenID, state, strings.Join(p.Tags, ","))
			}
			return t.flush()
		}),
	}
}

func (a *app) newFleetDeviceAcceptCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "accept PENDING-ID",
		Short: "Accept a pending device: it joins the fleet with its token's tags",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			d, err := c.AcceptPending(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.DeviceResponse{Device: d})
			}
			fmt.Fprintf(a.stdout, "device %s accepted; its agent collects its credentials on its next poll\n", d.ID)
			return nil
		}),
	}
}

func (a *app) newFleetDeviceRejectCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "reject PENDING-ID",
		Short: "Reject a pending device: its agent stops waiting with an error",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if err := c.RejectPending(ctx, args[0]); err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, map[string]string{"rejected": args[0]})
			}
			fmt.Fprintf(a.stdout, "enrolment %s rejected\n", args[0])
			return nil
		}),
	}
}
