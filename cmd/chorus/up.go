package main

import (
	"github.com/spf13/cobra"
)

func (a *app) newUpCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run Chorus on one machine: a gateway on loopback with data under ./chorus-data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load(cmd, a)
			if err != nil {
				return err
			}
			g, err := a.startGateway(cfg, "")
			if err != nil {
				return err
			}
			a.printUp(g.up, cfg.DataDir, true)
			<-cmd.Context().Done()
			return g.close()
		},
	}
	f.register(cmd, "127.0.0.1:1883", "127.0.0.1:8080")
	return cmd
}
