//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// fleetTokenFile is the file in the data dir holding the operator token
// the gateway creates at first start (docs/api.md, Authentication).
const fleetTokenFile = "operator-token"

// fleetFlags are the flags every `chorus fleet` command shares. What
// --server and --token leave unset comes from the data dir of `chorus up`:
// up.json's http_url and the operator-token file.
type fleetFlags struct {
	server, token, dataDir string
	output                 string
}

func (a *app) newFleetCmd() *cobra.Command {
	f := &fleetFlags{}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Operate a fleet: devices, skills, rollouts (a client of the gateway's HTTP API)",
		Long: "Operate a fleet through the gateway's HTTP API (docs/api.md).\n" +
			"The gateway is --server (CHORUS_SERVER), else up.json's http_url in --data-dir;\n" +
			"the operator token is --token (CHORUS_TOKEN), else <data-dir>/operator-token.\n" +
			"Exit codes: 0 ok, 1 failed (the gateway's message is printed), 2 usage error.",
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.server, "server", "", "gateway HTTP URL (default: up.json's http_url)")
	fl.StringVar(&f.token, "token", "", "operator token (default: <data-dir>/operator-token)")
	fl.StringVar(&f.dataDir, "data-dir", configs.DefaultDataDir, "directory of chorus up or chorus gateway holding up.json and operator-token")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	// A flag error is a usage error; children inherit this.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fleetUsage(err) })
	cmd.AddCommand(
		a.newFleetDeviceCmd(f),
		a.newFleetTokenCmd(f),
		a.newFleetIntegrationCmd(f),
		a.newFleetOperatorCmd(f),
		a.newFleetGrantCmd(f),
		a.newFleetSkillCmd(f),
		a.newFleetInstallCmd(f, fleet.RolloutInstall),
		a.newFleetInstallCmd(f, fleet.RolloutUninstall),
		a.newFleetRolloutCmd(f),
		a.newFleetAuditCmd(f),
		a.newFleetRouteCmd(f),
		a.newFleetExportCmd(f),
	)
	a.wireFleetCompletion(cmd, f)
	return cmd
}

// fleetRunE wraps a command body: it checks --output and the command's
// own flags (check, may be nil; its errors are usage errors), connects the
// client and turns what the call returns into the CLI's messages and exit
// codes. Checks run here, after the environment was applied to the flags.
func (a *app) fleetRunE(f *fleetFlags, check func(args []string) error, run func(ctx context.Context, c *fleetclient.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if f.output != "text" && f.output != "json" {
			return fleetUsage(fmt.Errorf("--output %q: want text or json", f.output))
		}
		if check != nil {
			if err := check(args); err != nil {
				return fleetUsage(err)
			}
		}
		c, err := f.client()
		if err != nil {
			return err
		}
		return fleetError(run(cmd.Context(), c, args))
	}
}

// json reports whether --output json was asked for.
func (f *fleetFlags) json() bool { return f.output == "json" }

// client merges the flags with the data dir. up.json and operator-token
// are read only for what the flags leave unset.
func (f *fleetFlags) client() (*fleetclient.Client, error) {
	server, token := f.server, f.token
	if server == "" {
		up, err := configs.ReadUp(configs.UpPath(f.dataDir))
		switch {
		case errors.Is(err, configs.ErrNoUpFile):
			return nil, fleetUsage(fmt.Errorf("no gateway: pass --server URL or set CHORUS_SERVER, or run next to `chorus up` (%s has no up.json)", f.dataDir))
		case err != nil:
			return nil, err
		case up.HTTPURL == "":
			return nil, fleetUsage(fmt.Errorf("%s has no http_url: pass --server URL", configs.UpPath(f.dataDir)))
		}
		server = up.HTTPURL
	}
	if token == "" {
		var err error
		if token, err = fleetReadToken(f.dataDir); err != nil {
			return nil, err
		}
	}
	c, err := fleetclient.New(fleetclient.Config{BaseURL: server, Token: token})
	if err != nil {
		return nil, fleetUsage(fmt.Errorf("--server: %w", err))
	}
	return c, nil
}

func fleetReadToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, fleetTokenFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fleetUsage(fmt.Errorf("no operator token: pass --token or set CHORUS_TOKEN, or run next to `chorus up` (%s does not exist)", path))
	}
	if err != nil {
		return "", fmt.Errorf("read operator token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("operator token %s is empty", path)
	}
	return tok, nil
}

// fleetError is where the client's errors get their wording and exit code:
// the API's message as is (exit 1), a hint for a wrong token, and a clear
// word when nothing answers.
func fleetError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	var unreachable *fleetclient.UnreachableError
	if errors.As(err, &unreachable) {
		return &exitError{code: 1, err: fmt.Errorf("%w; is `chorus gateway` or `chorus up` running?", err)}
	}
	if fleetclient.IsCode(err, api.CodeUnauthorized) {
		return &exitError{code: 1, err: fmt.Errorf("%w (check --token, CHORUS_TOKEN or <data-dir>/%s)", err, fleetTokenFile)}
	}
	return &exitError{code: 1, err: err}
}

// fleetUsage marks err as a usage error: exit code 2.
func fleetUsage(err error) error { return &exitError{code: 2, err: err} }

// fleetArgs is cobra.ExactArgs with exit code 2.
func fleetArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return fleetUsage(err)
		}
		return nil
	}
}

// fleetMinArgs is cobra.MinimumNArgs with exit code 2.
func fleetMinArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return fleetUsage(err)
		}
		return nil
	}
}
