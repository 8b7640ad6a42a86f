//go:build !chorus_agent

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/backup"
)

func (a *app) newBackupCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a backup of the gateway's state (it may keep running)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err == nil {
				return &exitError{code: 1, err: fmt.Errorf("backup %s: file exists", args[0])}
			}
			f, err := os.OpenFile(args[0], os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if err := backup.Create(cmd.Context(), dataDir, f); err != nil {
				f.Close()
				os.Remove(args[0])
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "backup of %s written to %s\n", dataDir, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", configs.DefaultDataDir, "the gateway's data dir")
	return cmd
}

func (a *app) newRestoreCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore a backup into an empty data dir (then start the gateway on it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if err := backup.Restore(f, dataDir); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "restored %s into %s; start it with: chorus gateway --data-dir %s\n", args[0], dataDir, dataDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "an empty or absent directory to restore into (required)")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}
