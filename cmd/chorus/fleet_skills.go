//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/gateway/artifact"
)

// fleetMaxArchive is the gateway's cap on a published archive (docs/api.md).
const fleetMaxArchive = 256 << 20

// fleetMaxSettings caps `skill config`'s FILE; the API caps JSON bodies at 1 MiB.
const fleetMaxSettings = 1 << 20

func (a *app) newFleetSkillCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "skill",
		Aliases: []string{"skills"},
		Short:   "Publish skills to the catalog, list, show, search and configure them",
	}
	cmd.AddCommand(
		a.newFleetSkillPublishCmd(f),
		a.newFleetSkillListCmd(f),
		a.newFleetSkillShowCmd(f),
		a.newFleetSkillSearchCmd(f),
		a.newFleetSkillConfigCmd(f),
	)
	return cmd
}

func (a *app) newFleetSkillPublishCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "publish DIR|ARCHIVE",
		Short: "Publish a skill: a directory (packed as `chorus skill pack` does) or an archive",
		Long: "Publish a skill to the catalog. A directory is packed first, exactly as `chorus skill pack`\n" +
			"would; an archive is sent as it is. The gateway validates it with the agent's discovery rules and\n" +
			"refuses an invalid one with the reason.",
		Args: fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			archive, err := fleetReadArchive(args[0])
			if err != nil {
				return err
			}
			sv, err := c.Publish(ctx, bytes.NewReader(archive))
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.SkillResponse{Skill: sv})
			}
			fmt.Fprintf(a.stdout, "published %s %s (sha256 %s, %d bytes)\n", sv.SkillID, sv.Version, sv.SHA256, sv.Size)
			return nil
		}),
	}
}

// fleetReadArchive packs a directory into memory, or reads an archive file.
func fleetReadArchive(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		var buf bytes.Buffer
		if _, err := artifact.Pack(path, &buf); err != nil {
			return nil, err
		}
		// Checked here first, as `chorus skill pack` does: the error names
		// this directory, which the gateway never sees.
		if _, err := discovery.CheckArchive(path, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("publish %s: %w", path, err)
		}
		return buf.Bytes(), nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, fleetMaxArchive+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > fleetMaxArchive {
		return nil, fmt.Errorf("%s: over the gateway's %d MiB cap", path, fleetMaxArchive>>20)
	}
	return b, nil
}

func (a *app) newFleetSkillListCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the catalog: the latest version of each skill",
		Args:    fleetArgs(0),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			skills, err := c.Skills(ctx)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.SkillsResponse{Skills: fleetList(skills)})
			}
			t := newFleetTable(a.stdout, "SKILL", "VERSION", "SIZE", "PUBLISHED", "DESCRIPTION")
			for _, s := range skills {
				t.row(s.SkillID, s.Version, strconv.FormatInt(s.Size, 10), fleetTime(s.PublishedAt), fleetClip(s.Description, 60))
			}
			return t.flush()
		}),
	}
}

func (a *app) newFleetSkillShowCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a skill and its published versions",
		Args:  fleetArgs(1),
		RunE: a.fleetRunE(f, nil, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			d, err := c.Skill(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				d.Versions = fleetList(d.Versions)
				return fleetJSON(a.stdout, d)
			}
			s := d.Skill
			err = fleetKV(a.stdout,
				"skill", s.SkillID, "title", s.Title, "version", s.Version, "description", s.Description,
				"requirements", strings.Join(s.Requirements, ", "), "sha256", s.SHA256,
				"size", strconv.FormatInt(s.Size, 10), "published", fleetTime(s.PublishedAt))
			if err != nil || len(d.Versions) == 0 {
				return err
			}
			fmt.Fprintln(a.stdout)
			t := newFleetTable(a.stdout, "VERSION", "SHA256", "SIZE", "PUBLISHED")
			for _, v := range d.Versions {
				t.row(v.Version, v.SHA256, strconv.FormatInt(v.Size, 10), fleetTime(v.PublishedAt))
			}
			return t.flush()
		}),
	}
}

func (a *app) newFleetSkillSearchCmd(f *fleetFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the catalog, best match first",
		Args:  fleetMinArgs(1),
		RunE: a.fleetRunE(f, func([]string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: must not be negative", limit)
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			results, err := c.Search(ctx, strings.Join(args, " "), limit)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.SearchResponse{Results: fleetList(results)})
			}
			t := newFleetTable(a.stdout, "SCORE", "SKILL", "VERSION", "DESCRIPTION")
			for _, r := range results {
				t.row(strconv.FormatFloat(r.Score, 'f', 2, 64), r.Skill.SkillID, r.Skill.Version, fleetClip(r.Skill.Description, 60))
			}
			return t.flush()
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many results (0: the gateway's default)")
	return cmd
}

func (a *app) newFleetSkillConfigCmd(f *fleetFlags) *cobra.Command {
	var tf fleetTargetFlags
	cmd := &cobra.Command{
		Use:   "config SKILL (--device ID | --tag T | --all) FILE",
		Short: "Set a skill's settings for a device, a tag or all devices",
		Long: "Set a skill's settings (FILE: a JSON object) for one target. They go into each device's\n" +
			"desired document; the agent writes them to the skill's settings.json.",
		Args: fleetArgs(2),
		RunE: a.fleetRunE(f, func([]string) error {
			_, err := tf.single()
			return err
		}, func(ctx context.Context, c *fleetclient.Client, args []string) error {
			target, _ := tf.single()
			settings, err := fleetReadSettings(args[1])
			if err != nil {
				return err
			}
			asg, err := c.ConfigureSkill(ctx, args[0], target, settings)
			if err != nil {
				return err
			}
			if f.json() {
				return fleetJSON(a.stdout, api.AssignmentResponse{Assignment: asg})
			}
			fmt.Fprintf(a.stdout, "settings of %s for %s set\n", args[0], describeTarget(target))
			return nil
		}),
	}
	tf.register(cmd, "configure")
	return cmd
}

// fleetReadSettings reads FILE and checks it holds one JSON object.
func fleetReadSettings(path string) (json.RawMessage, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, fleetMaxSettings+1))
	if err != nil {
		return nil, err
	}
	if len(b) > fleetMaxSettings {
		return nil, fmt.Errorf("settings %s: over %d KiB", path, fleetMaxSettings>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, fmt.Errorf("settings %s: not a JSON object", path)
	}
	if dec.More() {
		return nil, fmt.Errorf("settings %s: not one JSON object: trailing data", path)
	}
	return json.RawMessage(bytes.TrimSpace(b)), nil
}

// fleetTargetFlags are --device, --tag and --all, shared by install, uninstall
// and skill config.
type fleetTargetFlags struct {
	devices, tags []string
	all           bool
}

func (t *fleetTargetFlags) register(cmd *cobra.Command, verb string) {
	cmd.Flags().StringArrayVar(&t.devices, "device", nil, verb+" on this device (repeatable)")
	cmd.Flags().StringArrayVar(&t.tags, "tag", nil, verb+" on devices with this tag (repeatable)")
	cmd.Flags().BoolVar(&t.all, "all", false, verb+" on every device")
}

// list is the union the flags name: devices and tags, or all.
func (t *fleetTargetFlags) list() ([]fleet.Target, error) {
	if t.all {
		if len(t.devices)+len(t.tags) > 0 {
			return nil, errors.New("--all names every device: do not combine it with --device or --tag")
		}
		return []fleet.Target{{Kind: fleet.TargetAll}}, nil
	}
	var out []fleet.Target
	for _, d := range t.devices {
		out = append(out, fleet.Target{Kind: fleet.TargetDevice, Value: d})
	}
	for _, g := range t.tags {
		out = append(out, fleet.Target{Kind: fleet.TargetTag, Value: g})
	}
	if len(out) == 0 {
		return nil, errors.New("no target: pass --device ID, --tag T or --all")
	}
	return out, nil
}

// single is the one target of the flags.
func (t *fleetTargetFlags) single() (fleet.Target, error) {
	l, err := t.list()
	if err != nil {
		return fleet.Target{}, err
	}
	if len(l) != 1 {
		return fleet.Target{}, errors.New("pass exactly one of --device ID, --tag T or --all")
	}
	return l[0], nil
}
