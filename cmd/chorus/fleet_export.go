//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// newFleetExportCmd is `chorus fleet export mosquitto --out DIR` (password
// and ACL files) or `--dynsec DIR` (the dynamic-security plugin's file).
func (a *app) newFleetExportCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export the fleet's auth for an external MQTT broker",
	}
	var out, dynsec string
	mq := &cobra.Command{
		Use:   "mosquitto",
		Short: "Write Mosquitto 2 auth files expressing the fleet's ACL matrix",
		Long: "--out DIR writes DIR/password_file and DIR/acl_file (mode 0600) for Mosquitto 2's password_file\n" +
			"and acl_file options (devices and the controller only; reload with SIGHUP).\n" +
			"--dynsec DIR writes DIR/dynamic-security.json for the dynamic-security plugin: devices,\n" +
			"integrations, operators, the controller and every skill the controller knows of (agents need\n" +
			"skills.credentials \"derived\"); restart Mosquitto to load it, and export again when skills change.\n" +
			"Accounts that cannot be expressed are listed on stderr. See docs/security.md.",
		Args: fleetArgs(0),
		RunE: a.fleetRunE(f, func([]string) error {
			if (out == "") == (dynsec == "") {
				return fmt.Errorf("give one of --out (password and ACL files) or --dynsec (dynamic-security file)")
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
			if dynsec != "" {
				return a.exportDynSec(ctx, c, f, dynsec)
			}
			ex, err := c.ExportMosquitto(ctx)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return err
			}
			for name, body := range map[string]string{"password_file": ex.PasswordFile, "acl_file": ex.ACLFile} {
				if err := configs.WriteFileAtomic(filepath.Join(out, name), []byte(body), 0o600); err != nil {
					return err
				}
			}
			if f.json() {
				return fleetJSON(a.stdout, map[string]any{"dir": out, "skipped": ex.Skipped})
			}
			fmt.Fprintf(a.stdout, "Wrote %s and %s.\n", filepath.Join(out, "password_file"), filepath.Join(out, "acl_file"))
			for _, s := range ex.Skipped {
				fmt.Fprintf(a.stderr, "not exported: %s\n", s)
			}
			return nil
		}),
	}
	mq.Flags().StringVar(&out, "out", "", "directory to write password_file and acl_file to")
	mq.Flags().StringVar(&dynsec, "dynsec", "", "directory to write dynamic-security.json (Mosquitto's dynamic-security plugin) to")
	cmd.AddCommand(mq)
	return cmd
}

// exportDynSec writes DIR/dynamic-security.json and reports what it left out.
func (a *app) exportDynSec(ctx context.Context, c *fleetclient.Client, f *fleetFlags, dir string) error {
	ex, err := c.ExportMosquittoDynSec(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var body bytes.Buffer
	if err := json.Indent(&body, ex.DynamicSecurity, "", "  "); err != nil {
		return fmt.Errorf("dynamic-security export: %w", err)
	}
	body.WriteByte('\n')
	path := filepath.Join(dir, "dynamic-security.json")
	if err := configs.WriteFileAtomic(path, body.Bytes(), 0o600); err != nil {
		return err
	}
	if f.json() {
		return fleetJSON(a.stdout, map[string]any{"dynsec": path, "skipped": ex.Skipped})
	}
	fmt.Fprintf(a.stdout, "Wrote %s (plugin_opt_config_file; restart Mosquitto to load it).\n", path)
	for _, s := range ex.Skipped {
		fmt.Fprintf(a.stderr, "not exported: %s\n", s)
	}
	return nil
}
