//go:build !chorus_agent

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/ovosrt"
	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/device/skillkit/examples"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// newSkillCmd groups what runs inside a skill process and what makes one.
func (a *app) newSkillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Run skill processes (started by chorus agent) and pack skills for the fleet",
	}
	cmd.AddCommand(a.newSkillExampleCmd(), a.newSkillPackCmd())
	return cmd
}

// newSkillExampleCmd runs a bundled example skill. The bundled skills'
// run.sh is `exec "$CHORUS_BIN" skill example NAME`, so they need no build
// step; the agent provides the CHORUS_* environment (SKILL_MANAGER §2).
func (a *app) newSkillExampleCmd() *cobra.Command {
	names := examples.Names()
	return &cobra.Command{
		Use:   "example NAME",
		Short: "Run a bundled example skill: " + strings.Join(names, ", "),
		Long: "Run a bundled example skill (" + strings.Join(names, ", ") + ") until SIGTERM.\n" +
			"It reads CHORUS_MQTT_URL, CHORUS_USERNAME, CHORUS_PASSWORD, CHORUS_DEVICE,\n" +
			"CHORUS_SKILL_ID, CHORUS_BUS_PREFIX and CHORUS_SETTINGS, which chorus agent sets.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := skillkit.Config{Getenv: a.getenv, Logger: a.log}
			if err := examples.Run(cmd.Context(), args[0], cfg); err != nil {
				return fmt.Errorf("skill example %s: %w", args[0], err)
			}
			return nil
		},
	}
}

// newSkillPackCmd makes the archive `chorus fleet skill publish` sends.
func (a *app) newSkillPackCmd() *cobra.Command {
	var out, python, wheelhouse string
	cmd := &cobra.Command{
		Use:   "pack DIR",
		Short: "Pack a skill directory into a reproducible archive for `chorus fleet skill publish`",
		Long: "Pack a skill directory into <id>-<version>.tar.gz (or -o FILE), id and version from its SKILL.md,\n" +
			"and print the archive's sha256 and size. The same files give the same bytes, whatever their\n" +
			"mtimes or owners. The archive is checked with the agent's discovery rules first: it must hold\n" +
			"one valid skill, or nothing is written.\n\n" +
			"DIR may also be a stock OVOS skill's source tree (setup.py or pyproject.toml with an opm.skills\n" +
			"entry point): its wheel is built offline (pip wheel --no-index) and packed with a SKILL.md saying\n" +
			"runtime: ovos; the agent installs it into the skill's own directory (docs/ovos.md).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if ovosrt.IsSource(dir) {
				work, err := os.MkdirTemp("", "chorus-ovos-pack-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(work)
				b, err := ovosrt.Build(cmd.Context(), python, dir, wheelhouse, work)
				if err != nil {
					return fmt.Errorf("pack %s: %w", dir, err)
				}
				dir = b.Dir
			} else if wheelhouse != "" {
				return fmt.Errorf("pack %s: --wheelhouse is for OVOS skill source trees (setup.py or pyproject.toml)", dir)
			}
			return a.packSkill(dir, out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "archive path (default: <id>-<version>.tar.gz)")
	cmd.Flags().StringVar(&python, "python", "python3", "the Python whose pip builds an OVOS skill's wheel (with setuptools and wheel installed)")
	cmd.Flags().StringVar(&wheelhouse, "wheelhouse", "", "a directory of extra dependency wheels to ship with an OVOS skill")
	return cmd
}

func (a *app) packSkill(dir, out string) error {
	var buf bytes.Buffer
	info, err := artifact.Pack(dir, &buf)
	if err != nil {
		return err
	}
	s, err := discovery.CheckArchive(dir, buf.Bytes())
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	if out == "" {
		out = packFileName(s.ID) + "-" + packFileName(s.Version) + ".tar.gz"
	}
	if err := atomicfile.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	fmt.Fprintf(a.stdout, "packed %s %s into %s\nsha256 %s\nsize   %d\n", s.ID, s.Version, out, info.SHA256, info.Size)
	return nil
}

func packFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}
