//go:build !chorus_agent

package main

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/fleet/pki"
)

func (a *app) newCertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Make a private CA and server certificates for broker.tls and http.tls",
		Long: `Make a self-signed certificate authority for a home fleet and server
certificates signed by it (ECDSA P-256). Point broker.tls and http.tls at
server.pem and server-key.pem, and give ca.pem to the agents and clients.
Private keys are written with mode 0600; existing files are kept unless --force.`,
	}
	cmd.AddCommand(a.newCertCACmd(), a.newCertServerCmd())
	return cmd
}

func (a *app) newCertCACmd() *cobra.Command {
	var out, name string
	var force bool
	cmd := &cobra.Command{
		Use:   "ca --out DIR",
		Short: "Make a self-signed CA (10 years): ca.pem and ca-key.pem",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			certPEM, keyPEM, err := pki.MakeCA(name, time.Now())
			if err != nil {
				return err
			}
			if err := pki.WritePair(out, pki.CACertFile, pki.CAKeyFile, certPEM, keyPEM, force); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s and %s\n", filepath.Join(out, pki.CACertFile), filepath.Join(out, pki.CAKeyFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for ca.pem and ca-key.pem (created 0700)")
	cmd.Flags().StringVar(&name, "name", "Chorus fleet CA", "common name of the CA")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func (a *app) newCertServerCmd() *cobra.Command {
	var caDir, out string
	var hosts []string
	var force bool
	cmd := &cobra.Command{
		Use:   "server --ca DIR --host H[,H...] --out DIR",
		Short: "Make a server certificate (2 years) signed by the CA: server.pem and server-key.pem",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ca, err := tls.LoadX509KeyPair(filepath.Join(caDir, pki.CACertFile), filepath.Join(caDir, pki.CAKeyFile))
			if err != nil {
				return fmt.Errorf("load CA from %s: %w", caDir, err)
			}
			certPEM, keyPEM, err := pki.MakeServerCert(ca, hosts, time.Now())
			if err != nil {
				return err
			}
			if err := pki.WritePair(out, pki.ServerCertFile, pki.ServerKeyFile, certPEM, keyPEM, force); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s and %s for %s\n", filepath.Join(out, pki.ServerCertFile),
				filepath.Join(out, pki.ServerKeyFile), strings.Join(hosts, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&caDir, "ca", "", "directory holding ca.pem and ca-key.pem")
	cmd.Flags().StringSliceVar(&hosts, "host", nil, "DNS names and IP addresses the server answers on (comma-separated or repeated)")
	cmd.Flags().StringVar(&out, "out", "", "directory for server.pem and server-key.pem (created 0700)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files")
	for _, f := range []string{"ca", "host", "out"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
