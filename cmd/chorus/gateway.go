//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/external"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/localauth"
)

// serveFlags are the flags `chorus gateway` and `chorus up` share; a flag the
// user set overrides the config file.
type serveFlags struct {
	config       string
	dataDir      string
	mqttListen   string
	mqttWSListen string
	httpListen   string
	advMQTT      string
	advHTTP      string
	memoryLimit  string
}

func (f *serveFlags) register(cmd *cobra.Command, mqttDefault, httpDefault string) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "JSON config file (missing file = defaults)")
	fl.StringVar(&f.dataDir, "data-dir", configs.DefaultDataDir, "directory for state (broker store, credentials, up.json)")
	fl.StringVar(&f.mqttListen, "mqtt-listen", mqttDefault, "MQTT TCP listener host:port")
	fl.StringVar(&f.mqttWSListen, "mqtt-ws-listen", "", "MQTT-over-websocket listener host:port (off when empty)")
	fl.StringVar(&f.httpListen, "http-listen", httpDefault, "gateway HTTP listener host:port")
	fl.StringVar(&f.advMQTT, "advertise-mqtt", "", "MQTT address given to devices: URL, host or host:port (default: from the listener; a wildcard takes this host's routable address)")
	fl.StringVar(&f.advHTTP, "advertise-http", "", "HTTP address given to devices: URL, host or host:port (default: from the listener, as --advertise-mqtt)")
	fl.StringVar(&f.memoryLimit, "memory-limit", "", "Go soft memory limit, e.g. 512MiB or off (default: the config's memory_limit; GOMEMLIMIT wins)")
}

// load reads the config file and lays the flags the user set (or whose
// defaults differ from the file's role-neutral defaults) over it.
func (f *serveFlags) load(cmd *cobra.Command, a *app) (configs.Config, error) {
	cfg, warnings, err := configs.Load(f.config)
	if err != nil {
		return cfg, err
	}
	for _, w := range warnings {
		a.log.Warn("config: " + w)
	}
	fl := cmd.Flags()
	if f.config == "" || fl.Changed("data-dir") {
		cfg.DataDir = f.dataDir
	}
	if f.config == "" || fl.Changed("mqtt-listen") {
		cfg.Broker.MQTTListen = f.mqttListen
	}
	if fl.Changed("mqtt-ws-listen") {
		cfg.Broker.WSListen = f.mqttWSListen
	}
	if f.config == "" || fl.Changed("http-listen") {
		cfg.HTTP.Listen = f.httpListen
	}
	if fl.Changed("advertise-mqtt") {
		cfg.Broker.Advertise = f.advMQTT
	}
	if fl.Changed("advertise-http") {
		cfg.HTTP.Advertise = f.advHTTP
	}
	if fl.Changed("memory-limit") {
		cfg.MemoryLimit = f.memoryLimit
	}
	return cfg, cfg.Validate()
}

func (a *app) newGatewayCmd() *cobra.Command {
	var f serveFlags
	var ext externalFlags
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the gateway: the embedded MQTT broker and the HTTP API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.ignoreHangup(cmd.Context())
			cfg, err := f.load(cmd, a)
			if err != nil {
				return err
			}
			if err := ext.check(); err != nil {
				return err
			}
			g, err := a.startGateway(cmd.Context(), cfg, "", ext.config(a))
			if err != nil {
				return err
			}
			a.printUp(g.Up(), g.DataDir(), false)
			<-cmd.Context().Done()
			return g.Close()
		},
	}
	f.register(cmd, broker.DefaultMQTTListen, "0.0.0.0:8080")
	ext.register(cmd)
	cmd.AddCommand(a.newBackupCmd(), a.newRestoreCmd())
	return cmd
}

// startGateway tunes the GC for a gateway process and runs one
// (fleet/gatewayd): on the embedded broker, or on ext's external broker when
// ext is set. device, when set, also provisions a local device (`chorus up`).
func (a *app) startGateway(ctx context.Context, cfg configs.Config, device string, ext *external.Config) (*gatewayd.Main, error) {
	tuneGatewayGC()
	if err := applyMemoryLimit(cfg.MemoryLimit, a.log); err != nil {
		return nil, err
	}
	ver, _ := buildInfo()
	m := gatewayd.New(gatewayd.Config{Config: &cfg, LocalDevice: device, External: ext,
		ValidateSkill: validateSkill, Version: ver, Logger: a.log})
	if err := m.Run(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// validateSkill checks an unpacked archive with the agent's own discovery
// rules, so the fleet never publishes a skill an agent would refuse.
func validateSkill(dir string) (controller.SkillInfo, error) {
	s, err := discovery.Single(dir)
	if err != nil {
		return controller.SkillInfo{}, err
	}
	return controller.SkillInfo{ID: s.ID, Version: s.Version, Title: s.ID, Description: s.Description,
		Requirements: s.Requirements}, nil
}

func (a *app) printf(format string, args ...any) { fmt.Fprintf(a.stdout, format, args...) }

// printUp tells a person what listens where and what to try next.
func (a *app) printUp(up configs.Up, dataDir string, withAgent bool) {
	fmt.Fprintf(a.stdout, "Chorus is up.\n  MQTT  %s\n  HTTP  %s\n  credentials: %s (mode 0600)\n", up.MQTTURL, up.HTTPURL, configs.UpPath(dataDir))
	if up.AdvertiseMQTTURL != "" {
		fmt.Fprintf(a.stdout, "  devices are given  MQTT %s  HTTP %s (--advertise-mqtt, --advertise-http)\n", up.AdvertiseMQTTURL, up.AdvertiseHTTPURL)
	}
	if withAgent && up.Device != "" {
		fmt.Fprintf(a.stdout, "  local device: %s\n", up.Device)
	}
	fmt.Fprintf(a.stdout, "  dashboard  %s/ (sign in with the operator token in %s)\n", up.HTTPURL, filepath.Join(dataDir, localauth.TokenFile))
	fmt.Fprintf(a.stdout, "Try:\n  curl %s/healthz\n", up.HTTPURL)
	fmt.Fprintf(a.stdout, "  # the read-only observer account (it can publish nothing):\n  %s\n", observerSub(up, dataDir))
	fmt.Fprintf(a.stdout, "  # Home Assistant, which switches skills, gets an account of its own:\n  chorus fleet integration add homeassistant --data-dir %s\n", shellQuote(dataDir))
	fmt.Fprintln(a.stdout, "Stop with Ctrl-C.")
}

// observerSub is a mosquitto_sub command line that watches the whole tree
// with the observer account of up: the broker's real host and port (a
// wildcard listener is reached on loopback from this machine) and the
// password read from up.json where it was written.
func observerSub(up configs.Up, dataDir string) string {
	host, port := "127.0.0.1", "1883"
	tls := ""
	if u, err := url.Parse(up.MQTTURL); err == nil {
		if h := u.Hostname(); h != "" && !net.ParseIP(h).IsUnspecified() {
			host = h
		}
		if p := u.Port(); p != "" {
			port = p
		}
		if u.Scheme == "mqtts" || u.Scheme == "ssl" {
			tls = " --cafile <the broker's CA certificate>"
		}
	}
	return fmt.Sprintf(`mosquitto_sub -V 5 -h %s -p %s%s -u %s -P "$(jq -r .observer.password %s)" -t 'chorus/v1/#' -v`,
		host, port, tls, up.Observer.Username, shellQuote(configs.UpPath(dataDir)))
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
