package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// newFleetExportCmd is `chorus fleet export mosquitto --out DIR`.
func (a *app) newFleetExportCmd(f *fleetFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export the fleet's auth for an external MQTT broker",
	}
	var out string
	mq := &cobra.Command{
		Use:   "mosquitto",
		Short: "Write a Mosquitto 2 password_file and acl_file expressing the fleet's ACL matrix",
		Long: "Writes DIR/password_file and DIR/acl_file (mode 0600) for Mosquitto 2's password_file and\n" +
			"acl_file options; reload Mosquitto with SIGHUP afterwards. Accounts Mosquitto's files cannot\n" +
			"express (usernames with ':', secrets created before hashes were recorded) are listed on stderr.",
		Args: fleetArgs(0),
		RunE: a.fleetRunE(f, func([]string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			return nil
		}, func(ctx context.Context, c *fleetclient.Client, _ []string) error {
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
	cmd.AddCommand(mq)
	return cmd
}
