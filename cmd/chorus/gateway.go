package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/httpapi"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// serveFlags are the flags `chorus gateway` and `chorus up` share; a flag the
// user set overrides the config file.
type serveFlags struct {
	config       string
	dataDir      string
	mqttListen   string
	mqttWSListen string
	httpListen   string
}

func (f *serveFlags) register(cmd *cobra.Command, mqttDefault, httpDefault string) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "JSON config file (missing file = defaults)")
	fl.StringVar(&f.dataDir, "data-dir", configs.DefaultDataDir, "directory for state (broker store, credentials, up.json)")
	fl.StringVar(&f.mqttListen, "mqtt-listen", mqttDefault, "MQTT TCP listener host:port")
	fl.StringVar(&f.mqttWSListen, "mqtt-ws-listen", "", "MQTT-over-websocket listener host:port (off when empty)")
	fl.StringVar(&f.httpListen, "http-listen", httpDefault, "gateway HTTP listener host:port")
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
			cfg, err := f.load(cmd, a)
			if err != nil {
				return err
			}
			if err := ext.check(); err != nil {
				return err
			}
			var g *gatewayRun
			if ext.broker == "external" {
				g, err = a.startExternalGateway(cfg, ext)
			} else {
				g, err = a.startGateway(cfg, "")
			}
			if err != nil {
				return err
			}
			a.printUp(g.up, g.dataDir, false)
			<-cmd.Context().Done()
			return g.close()
		},
	}
	f.register(cmd, broker.DefaultMQTTListen, "0.0.0.0:8080")
	ext.register(cmd)
	cmd.AddCommand(a.newBackupCmd(), a.newRestoreCmd())
	return cmd
}

// gatewayRun is a running gateway.
type gatewayRun struct {
	a       *app
	dataDir string
	broker  *broker.Broker
	store   *sqlite.DB
	fleet   *controller.Controller
	token   string
	http    *httpapi.Server
	up      configs.Up
	local   localauth.Local
	ext     *externalRun // set when the broker is external (gateway_external.go)
}

// startGateway starts the broker, the fleet controller and the HTTP API,
// and writes up.json. device, when set, also provisions a local device and
// registers it in the fleet like any other (`chorus up`).
func (a *app) startGateway(cfg configs.Config, device string) (*gatewayRun, error) {
	tuneGatewayGC()
	local, err := localauth.LoadOrCreate(cfg.DataDir, device)
	if err != nil {
		return nil, err
	}
	accounts, err := local.Accounts()
	if err != nil {
		return nil, err
	}
	table, err := broker.NewTable(accounts...)
	if err != nil {
		return nil, err
	}
	bcfg, err := brokerConfig(cfg, a)
	if err != nil {
		return nil, err
	}
	b, err := broker.Start(bcfg, table)
	if err != nil {
		return nil, err
	}
	g := &gatewayRun{a: a, dataDir: cfg.DataDir, broker: b, local: local}
	if err := g.start(cfg, accounts, device); err != nil {
		_ = g.close()
		return nil, err
	}
	g.setAvailability("online")
	return g, nil
}

// start runs the fleet and the HTTP API over the running broker.
func (g *gatewayRun) start(cfg configs.Config, accounts []broker.Account, device string) error {
	ln, tlsCfg, err := listenHTTP(cfg)
	if err != nil {
		return err
	}
	g.up = configs.Up{MQTTURL: g.mqttURL(), HTTPURL: httpURL(ln, tlsCfg), Observer: g.local.Observer, Operator: g.local.Operator}
	if err := g.startFleet(cfg, accounts, device); err != nil {
		ln.Close()
		return err
	}
	if err := g.startHTTP(ln, tlsCfg); err != nil {
		return err
	}
	if g.local.Device != nil && device != "" {
		agent := *g.local.Device
		agent.MQTTURL, agent.ServerURL = g.up.MQTTURL, g.up.HTTPURL
		g.up.Device, g.up.Agent = device, &agent
	}
	return configs.WriteUp(configs.UpPath(cfg.DataDir), g.up)
}

func listenHTTP(cfg configs.Config) (net.Listener, *tls.Config, error) {
	tlsCfg, err := cfg.HTTP.TLS.Config()
	if err != nil {
		return nil, nil, fmt.Errorf("http.tls: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("listen http on %s: %w", cfg.HTTP.Listen, err)
	}
	return ln, tlsCfg, nil
}

func httpURL(ln net.Listener, tlsCfg *tls.Config) string {
	if tlsCfg != nil {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}

func (g *gatewayRun) startHTTP(ln net.Listener, tlsCfg *tls.Config) error {
	ver, _ := buildInfo()
	var err error
	g.http, err = httpapi.Start(httpapi.Config{
		Listener: ln, TLS: tlsCfg, Version: ver, Logger: g.a.log.With("component", "http"),
		Fleet: g.httpFleet(), Token: g.token, VerifyDevice: g.fleet.VerifyDevice, Metrics: g.fleet.Metrics(),
		MQTT: g.health,
	})
	return err
}

func brokerConfig(cfg configs.Config, a *app) (broker.Config, error) {
	tlsCfg, err := cfg.Broker.TLS.Config()
	if err != nil {
		return broker.Config{}, fmt.Errorf("broker.tls: %w", err)
	}
	return broker.Config{
		MQTTListen: cfg.Broker.MQTTListen, WSListen: cfg.Broker.WSListen, TLS: tlsCfg,
		DataDir:          cfg.DataDir + "/broker",
		MaxPacketSize:    uint32(cfg.Broker.MaxPacketSize),
		MaxMessageExpiry: cfg.Broker.MaxMessageExpiry,
		MaxInflight:      uint16(cfg.Broker.MaxInflight),
		MaxWritesPending: int32(cfg.Broker.MaxWritesPending),
		MaxClients:       cfg.Broker.MaxClients,
		Logger:           a.log.With("component", "broker"),
	}, nil
}

// setAvailability publishes the gateway's own retained availability.
func (g *gatewayRun) setAvailability(state string) {
	err := g.publish(broker.Message{Topic: topic.GatewayAvailability, Payload: []byte(state), QoS: 1, Retain: true})
	if err != nil {
		g.a.log.Warn("publish gateway availability", "error", err)
	}
}

// close stops the gateway within 5 s: the HTTP API, the controller, the
// store, then the broker. It tolerates a partial start.
func (g *gatewayRun) close() error {
	g.setAvailability("offline")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var errs []error
	if g.http != nil {
		errs = append(errs, g.http.Close(ctx))
	}
	g.closeSync()
	if g.fleet != nil {
		errs = append(errs, g.fleet.Close())
	}
	if g.store != nil {
		errs = append(errs, g.store.Close())
	}
	errs = append(errs, g.closeBroker())
	return errors.Join(errs...)
}

func (a *app) printf(format string, args ...any) { fmt.Fprintf(a.stdout, format, args...) }

// printUp tells a person what listens where and what to try next.
func (a *app) printUp(up configs.Up, dataDir string, withAgent bool) {
	fmt.Fprintf(a.stdout, "Chorus is up.\n  MQTT  %s\n  HTTP  %s\n  credentials: %s (mode 0600)\n", up.MQTTURL, up.HTTPURL, configs.UpPath(dataDir))
	if withAgent && up.Device != "" {
		fmt.Fprintf(a.stdout, "  local device: %s\n", up.Device)
	}
	fmt.Fprintf(a.stdout, "Try:\n  curl %s/healthz\n", up.HTTPURL)
	fmt.Fprintf(a.stdout, "  mosquitto_sub -V 5 -h <host> -p <port> -u %s -P <observer password from up.json> -t 'chorus/v1/#' -v\n", up.Observer.Username)
	fmt.Fprintln(a.stdout, "Stop with Ctrl-C.")
}
