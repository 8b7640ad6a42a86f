package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// app carries what every command needs: output streams, the environment and
// the logger built from the persistent flags. No package globals.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	logLevel  string
	logFormat string
	log       *slog.Logger

	heartbeat time.Duration // --wait's repeat of an unchanged progress line
}

func newApp(stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdout: stdout, stderr: stderr, getenv: getenv, log: slog.New(slog.DiscardHandler)}
}

// exitError carries an exit code for errors that are not plain failures.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func (a *app) execute(ctx context.Context, args []string) int {
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(a.stderr, "chorus:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "chorus",
		Short:         "MQTT edge gateway for fleets of OpenVoiceOS voice satellites",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.applyEnv(cmd); err != nil {
				return err
			}
			return a.setupLogging()
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	root.AddCommand(a.commands()...)
	strictGroups(root)
	return root
}

func (a *app) setupLogging() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return fmt.Errorf("--log-format %q: want text or json", a.logFormat)
	}
	return nil
}

// applyEnv sets every flag the user did not pass from CHORUS_<FLAG> in the
// environment (dashes become underscores): flags > environment > config file > defaults.
func (a *app) applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "CHORUS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := a.getenv(name)
		if v == "" {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = fmt.Errorf("environment %s=%q: %w", name, v, serr)
		}
	})
	return err
}
