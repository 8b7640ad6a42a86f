//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/gateway/advertise"
)

func (a *app) newFleetDeviceCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "device",
		Aliases: []string{"devices"},
		Short:   "Enrol, list, tag, rotate and remove devices",
	}
	cmd.AddCommand(
		a.newFleetDeviceAddCmd(f),
		a.newFleetDeviceListCmd(f),
		a.newFleetDeviceShowCmd(f),
		a.newFleetDeviceTagCmd(f),
		a.newFleetDeviceRmCmd(f),
		a.newFleetDeviceRotateCmd(f),
		a.newFleetDevicePendingCmd(f),
		a.newFleetDeviceAcceptCmd(f),
		a.newFleetDeviceRejectCmd(f),
	)
	return cmd
}

func (a *app) newFleetDeviceAddCmd(f *fleetFlags) *cobra.Command {
	var (
		tags                    []string
		credsOut, from, credDir string
	)
	cmd := &cobra.Command{
		Use:   "add ID | add --from FILE --credentials-dir DIR",
		Short: "Enrol a device and print its credentials (shown only once)",
		Long: "Enrol a device. Its credentials, for `chorus agent --credentials FILE`, are shown only once:\n" +
			"printed to stdout, or written with mode 0600 to --credentials-out FILE.\n\n" +
			"--from FILE enrols many: CSV lines `id,tag1;tag2` (an `id,tags` header is skipped) or JSON lines\n" +
			"`{\"id\": \"pi-1\", \"tags\": [\"kitchen\"]}`; blank lines and # comments are skipped. Each device's\n" +
			"credentials go to --credentials-dir DIR/<id>.json. A bad line is reported and the rest go on;\n" +
			"the exit code is 1 if any line failed. --tag adds tags to every device.",
		Args: cobra.ArbitraryArgs,
		RunE: a.fleetRunE(f, func(args []string) error {
			switch {
			case from != "" && len(args) > 0:
				return errors.New("pass an ID or --from FILE, not both")
			case from != "" && credDir == "":
				return errors.New("--from needs --credentials-dir DIR: the credentials are shown only once")
			case from != "" && credsOut != "":
				return errors.New("--credentials-out is for one device; with --from use --credentials-dir")
			case from == "" && len(args) != 1:
				return fmt.Errorf("want one device ID (or --from FILE), got %d arguments", len(args))
			case from == "" && credDir != "":
				return errors.New("--credentials-dir goes with --from; for one device use --credentials-out")
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if from != "" {
				return a.bulkAdd(ctx, c, f, bulkOptions{from: from, credDir: credDir, tags: tags})
			}
			enr, err := c.AddDevice(ctx, args[0], tags)
			if err != nil {
				return a.keepUnconfirmed(args[0], credsOut, err)
			}
			return a.printEnrolled(f, enr, credsOut, "added")
		}),
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag the device (repeatable)")
	cmd.Flags().StringVar(&credsOut, "credentials-out", "", "write the credentials to FILE (mode 0600) instead of stdout")
	cmd.Flags().StringVar(&from, "from", "", "enrol every device listed in FILE (CSV or JSON lines)")
	cmd.Flags().StringVar(&credDir, "credentials-dir", "", "with --from: write each device's credentials to DIR/<id>.json")
	return cmd
}

// keepUnconfirmed saves the credentials the gateway returned with an add
// it could not confirm (the device may exist; its secret is shown only
// now), to credsOut or stderr, and says how to find out. err is returned
// as it was, so the exit code still says the add failed.
func (a *app) keepUnconfirmed(id, credsOut string, err error) error {
	var fe *fleetclient.Error
	if !errors.As(err, &fe) || fe.Credentials == nil {
		return err
	}
	where := "below"
	if credsOut != "" {
		if werr := configs.WriteAgentCredentials(credsOut, *fe.Credentials); werr != nil {
			credsOut = ""
		} else {
			where = credsOut
		}
	}
	fmt.Fprintf(a.stderr, "device %s may or may not have been added; its credentials are saved %s in case it was: "+
		"`chorus fleet device show %s` tells (if it exists, they are its credentials; if not, add it again)\n", id, where, id)
	if credsOut == "" {
		_ = fleetJSON(a.stdout, *fe.Credentials)
	}
	return err
}

// printEnrolled shows new credentials: written to credsOut, or printed as
// the file `chorus agent --credentials` reads, with a note on stderr.
func (a *app) printEnrolled(f *fleetFlags, enr api.Enrolled, credsOut, verb string) error {
	id := enr.Device.ID
	for _, u := range []string{enr.Credentials.MQTTURL, enr.Credentials.ServerURL} {
		if w := advertise.LocalOnly(u); w != "" {
			fmt.Fprintf(a.stderr, "warning: these credentials work on this machine only: %s\n", w)
		}
	}
	if credsOut != "" {
		if err := configs.WriteAgentCredentials(credsOut, enr.Credentials); err != nil {
			return fmt.Errorf("device %s %s, but its credentials could not be saved: %w; get new ones with `chorus fleet device rotate %s`", id, verb, err, id)
		}
		if f.json() {
			return fleetJSON(a.stdout, map[string]any{"device": enr.Device, "credentials_file": credsOut})
		}
		fmt.Fprintf(a.stdout, "device %s %s; credentials written to %s\n", id, verb, credsOut)
		return nil
	}
	if f.json() {
		return fleetJSON(a.stdout, enr)
	}
	fmt.Fprintf(a.stderr, "device %s %s; its credentials are shown only once: save them for `chorus agent --credentials FILE`\n", id, verb)
	return fleetJSON(a.stdout, enr.Credentials)
}

func (a *app) newFleetDeviceListCmd(f *fleetFlags) *cobra.Command {
	var tag string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List devices: presence, agent, connectivity, skills loaded vs desired, drift",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			devs, err := c.Devices(ctx, fleet.DeviceFilter{Tag: tag})
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.DevicesResponse{Devices: fleetList(devs)})
			}
			t := newFleetTable(a.stdout, "ID", "ONLINE", "LAST SEEN", "AGENT", "NET/INET/GUI", "LOADED/DESIRED", "DRIFT", "TAGS")
			for _, d := range devs {
				t.row(d.ID, fleetYesNo(d.Online), fleetTime(d.LastSeen), d.AgentVersion, connectivityCell(d),
					fmt.Sprintf("%d/%d", d.SkillsLoaded, d.SkillsDesired), fleetYesNo(d.Drift), strings.Join(d.Tags, ","))
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&tag, "tag", "", "only devices with this tag")
	return cmd
}

// connectivityCell is y/n for network, internet and GUI (docs/topics.md
// `connectivity`), "-" before the device reported any.
func connectivityCell(d api.Device) string {
	c, ok := d.ParseConnectivity()
	if !ok {
		return "-"
	}
	return fleetYN(c.Network) + "/" + fleetYN(c.Internet) + "/" + fleetYN(c.GUI)
}

func (a *app) newFleetDeviceShowCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one device",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			d, err := c.Device(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.DeviceResponse{Device: d})
			}
			return a.printDevice(d)
		}),
	}
}

func (a *app) printDevice(d api.Device) error {
	conn := "not reported"
	if c, ok := d.ParseConnectivity(); ok {
		conn = fmt.Sprintf("network %s, internet %s, gui %s", fleetYN(c.Network), fleetYN(c.Internet), fleetYN(c.GUI))
	}
	if err := fleetKV(a.stdout,
		"id", d.ID,
		"tags", strings.Join(d.Tags, ", "),
		"online", fleetYesNo(d.Online),
		"last seen", fleetTime(d.LastSeen),
		"birth session", strconv.FormatUint(d.BirthSession, 10),
		"agent", d.AgentVersion,
		"connectivity", conn,
		"skills", fmt.Sprintf("%d loaded / %d desired", d.SkillsLoaded, d.SkillsDesired),
		"desired version", fmt.Sprintf("%d (applied %d)", d.DesiredVersion, d.AppliedVersion),
		"drift", fleetYesNo(d.Drift),
		"created", fleetTime(d.CreatedAt),
	); err != nil || len(d.Skills) == 0 {
		return err
	}
	fmt.Fprintln(a.stdout)
	t := newFleetTable(a.stdout, "SKILL", "DESIRED", "VERSION", "STATE", "WHY")
	for _, s := range d.Skills {
		t.row(s.ID, orDash(s.Desired), orDash(s.Version), s.State, orDash(s.Reason))
	}
	return t.flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) newFleetDeviceTagCmd(f *fleetFlags) *cobra.Command {
	var set, add, rm []string
	cmd := &cobra.Command{
		Use:   "tag ID (--set a,b | --add T... | --rm T...)",
		Short: "Replace, add or remove a device's tags",
		Long: "Replace a device's tags (--set a,b; --set '' clears them), or add and remove some (--add, --rm,\n" +
			"repeatable, together if you like). A device that joins a tag gets that tag's skills.",
		Args: fleetArgs(1),
	}
	cmd.RunE = a.fleetRunE(f, func([]string) error {
		setting := cmd.Flags().Changed("set")
		switch {
		case setting && (len(add) > 0 || len(rm) > 0):
			return errors.New("--set replaces all tags: do not combine it with --add or --rm")
		case !setting && len(add) == 0 && len(rm) == 0:
			return errors.New("pass --set a,b, --add T or --rm T")
		}
		return nil
	}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
		tags := set
		if !cmd.Flags().Changed("set") {
			// Read, modify, write: the API replaces the whole set.
			d, err := c.Device(ctx, args[0])
			if err != nil {
				return err
			}
			tags = editTags(d.Tags, add, rm)
		}
		d, err := c.SetTags(ctx, args[0], cleanTags(tags))
		if err != nil {
			return err
		}
		if f.json() {
			return fleetJSON(a.stdout, api.DeviceResponse{Device: d})
		}
		fmt.Fprintf(a.stdout, "device %s tags: %s\n", d.ID, fleetDash(strings.Join(d.Tags, ", ")))
		return nil
	})
	cmd.Flags().StringSliceVar(&set, "set", nil, "replace all tags with these (comma-separated)")
	cmd.Flags().StringSliceVar(&add, "add", nil, "add tags (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&rm, "rm", nil, "remove tags (repeatable or comma-separated)")
	return cmd
}

// editTags returns tags plus add minus rm, in order, without duplicates.
func editTags(tags, add, rm []string) []string {
	out := slices.Clone(tags)
	for _, t := range add {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return slices.DeleteFunc(out, func(t string) bool { return slices.Contains(rm, t) })
}

// cleanTags trims tags and drops empty and repeated ones, so an empty --set clears.
func cleanTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func fleetDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) newFleetDeviceRmCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a device: revoked at once, a connected agent is disconnected",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			if err := c.RemoveDevice(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "device %s removed\n", args[0])
			return nil
		}),
	}
}

func (a *app) newFleetDeviceRotateCmd(f *fleetFlags) *cobra.Command {
	var credsOut string
	cmd := &cobra.Command{
		Use:   "rotate ID",
		Short: "Replace a device's secret and signing key; prints the new credentials once",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			enr, err := c.RotateDevice(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printEnrolled(f, enr, credsOut, "rotated")
		}),
	}
	cmd.Flags().StringVar(&credsOut, "credentials-out", "", "write the credentials to FILE (mode 0600) instead of stdout")
	return cmd
}

// fleetList makes an empty list print as [] rather than null.
func fleetList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// fleetCredPath is where bulk enrolment writes a device's credentials.
func fleetCredPath(dir, id string) string { return filepath.Join(dir, id+".json") }
