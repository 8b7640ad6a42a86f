package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/external"
	"github.com/chorus-edge/chorus/fleet/localauth"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittosync"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// externalFlags are `chorus gateway`'s flags for running on an external MQTT
// 5 broker (docs/security.md, "On an external broker").
type externalFlags struct {
	broker     string // embedded | external
	url        string
	username   string
	password   string
	authSecret string
	// mosquittoDynsec keeps Mosquitto's dynamic-security plugin in step with
	// the registry over $CONTROL (gateway_dynsec.go).
	mosquittoDynsec bool
}

func (f *externalFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.broker, "broker", "embedded", "MQTT broker: embedded (mochi, in-process) or external (--mqtt-url)")
	fl.StringVar(&f.url, "mqtt-url", "", "external broker URL (mqtt://, mqtts://, ws://, wss://); agents get it in their credentials")
	fl.StringVar(&f.username, "mqtt-username", "controller", "the controller's username on the external broker")
	fl.StringVar(&f.password, "mqtt-password", "", "the controller's password on the external broker (or $CHORUS_MQTT_PASSWORD)")
	fl.StringVar(&f.authSecret, "broker-auth-secret", "", "shared secret of the EMQX-shaped HTTP auth endpoints (or $CHORUS_BROKER_AUTH_SECRET; off when empty)")
	fl.BoolVar(&f.mosquittoDynsec, "mosquitto-dynsec", false, "keep Mosquitto's dynamic-security clients, roles and groups in step with the registry over $CONTROL/dynamic-security/v1 (needs --broker external)")
}

func (f *externalFlags) check() error {
	switch f.broker {
	case "embedded":
		if f.url != "" {
			return fmt.Errorf("--mqtt-url needs --broker external")
		}
		if f.mosquittoDynsec {
			return fmt.Errorf("--mosquitto-dynsec needs --broker external")
		}
		return nil
	case "external":
	default:
		return fmt.Errorf("--broker %q: want embedded or external", f.broker)
	}
	if f.url == "" {
		return fmt.Errorf("--broker external needs --mqtt-url")
	}
	if f.password == "" {
		f.password = os.Getenv("CHORUS_MQTT_PASSWORD")
	}
	if f.authSecret == "" {
		f.authSecret = os.Getenv("CHORUS_BROKER_AUTH_SECRET")
	}
	return nil
}

// externalRun is the gateway's connection to an external broker.
type externalRun struct {
	mqtt    *bus.MQTT
	adapter *external.Adapter
	flags   externalFlags

	// The live dynamic-security sync and its connection (--mosquitto-dynsec); nil when off.
	sync     *mosquittosync.Syncer
	syncMQTT *bus.MQTT
}

// startExternalGateway is startGateway on an external broker: the controller
// connects as an ordinary MQTT 5 client, and agents get the broker's URL.
func (a *app) startExternalGateway(cfg configs.Config, f externalFlags) (*gatewayRun, error) {
	tuneGatewayGC()
	local, err := localauth.LoadOrCreate(cfg.DataDir, "")
	if err != nil {
		return nil, err
	}
	accounts, err := local.Accounts()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offline := &bus.Packet{Topic: topic.GatewayAvailability, Payload: []byte("offline"), QoS: 1, Retain: true}
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: f.url, Username: f.username, Password: f.password,
		ClientID: "chorus-controller", Will: offline, SessionExpiry: 0, CleanStart: true,
		Logger: a.log.With("component", "mqtt")})
	if err != nil {
		return nil, fmt.Errorf("external broker: %w", err)
	}
	ext := &externalRun{mqtt: m, adapter: external.New(m), flags: f}
	g := &gatewayRun{a: a, dataDir: cfg.DataDir, ext: ext, local: local}
	if f.mosquittoDynsec {
		if ext.sync, ext.syncMQTT, err = a.newDynsecSync(ctx, g, f); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	if err := g.start(cfg, accounts, ""); err != nil {
		_ = g.close()
		return nil, err
	}
	g.setAvailability("online")
	return g, nil
}

// mqttURL is what agents and up.json get.
func (g *gatewayRun) mqttURL() string {
	if g.ext != nil {
		return g.ext.flags.url
	}
	return g.broker.URL()
}

// fleetBroker is the controller's broker: the embedded one or the adapter.
func (g *gatewayRun) fleetBroker() controller.Broker {
	if g.ext != nil && g.ext.sync != nil {
		return syncingAdapter{Adapter: g.ext.adapter, sync: g.ext.sync, log: g.a.log.With("component", "mosquitto-sync")}
	}
	if g.ext != nil {
		return g.ext.adapter
	}
	return g.broker
}

func (g *gatewayRun) publish(m broker.Message) error {
	if g.ext != nil {
		return g.ext.adapter.Publish(m)
	}
	return g.broker.Publish(m)
}

func (g *gatewayRun) health() *api.MQTTHealth {
	if g.ext != nil {
		return &api.MQTTHealth{Broker: "external", URL: g.ext.flags.url}
	}
	s := g.broker.Stats()
	return &api.MQTTHealth{Clients: &s.ClientsConnected, Retained: &s.Retained}
}

// closeSync stops the live dynamic-security sync, before the controller:
// a reconcile worker waiting for it to create a skill's client is released
// at once instead of running out its wait.
// Only close calls it, once.
func (g *gatewayRun) closeSync() {
	if g.ext != nil && g.ext.sync != nil {
		g.ext.sync.Close()
		_ = g.ext.syncMQTT.Close()
	}
}

func (g *gatewayRun) closeBroker() error {
	if g.ext != nil {
		return g.ext.mqtt.Close()
	}
	return g.broker.Close()
}

// httpFleet is what the HTTP API serves: the controller, plus recording of
// Mosquitto hashes when a secret is created, the Mosquitto export and (on an
// external broker) the EMQX-shaped auth decisions.
func (g *gatewayRun) httpFleet() *exportingFleet {
	return &exportingFleet{Controller: g.fleet, store: g.store, local: g.local, ext: g.ext, log: g.a, table: g.authTable}
}

// authTable is the auth table the controller last installed.
func (g *gatewayRun) authTable() *broker.Table {
	if g.ext != nil {
		return g.ext.adapter.Table()
	}
	return g.broker.Table()
}

// exportingFleet records, for every secret the controller creates, its
// Mosquitto hash (the only moment the plain secret is known), so that
// `chorus fleet export mosquitto` can write a password file.
type exportingFleet struct {
	*controller.Controller
	store *sqlite.DB
	local localauth.Local
	ext   *externalRun
	log   *app
	table func() *broker.Table // the live auth table: skill accounts as the broker derives them
}

func (f *exportingFleet) record(ctx context.Context, username, secret string) {
	h, err := mosquittoexport.Hash(secret)
	if err == nil {
		err = f.store.PutExportHash(ctx, sqlite.ExportHash{Username: username, SecretHash: broker.HashSecret(secret), Mosquitto: h})
	}
	if err != nil {
		f.log.log.Warn("mosquitto hash not recorded; rotate the credential to export it", "username", username, "error", err)
	}
	f.pushSecret(username, secret)
}

func (f *exportingFleet) AddDevice(ctx context.Context, actor, id string, tags []string) (*fleet.Device, configs.AgentCredentials, error) {
	d, c, err := f.Controller.AddDevice(ctx, actor, id, tags)
	if err == nil {
		f.record(ctx, c.Username, c.Password)
	}
	return d, c, err
}

func (f *exportingFleet) RotateDevice(ctx context.Context, actor, id string) (*fleet.Device, configs.AgentCredentials, error) {
	d, c, err := f.Controller.RotateDevice(ctx, actor, id)
	if err == nil {
		f.record(ctx, c.Username, c.Password)
	}
	return d, c, err
}

func (f *exportingFleet) AddIntegration(ctx context.Context, actor, name string, allow []string) (*fleet.Integration, configs.Credential, error) {
	i, c, err := f.Controller.AddIntegration(ctx, actor, name, allow)
	if err == nil {
		f.record(ctx, c.Username, c.Password)
	}
	return i, c, err
}

func (f *exportingFleet) AddOperator(ctx context.Context, actor, name string) (*fleet.Operator, configs.Credential, error) {
	o, c, err := f.Controller.AddOperator(ctx, actor, name)
	if err == nil {
		f.record(ctx, c.Username, c.Password)
	}
	return o, c, err
}

// ExportMosquitto renders the registry's and the local accounts with the
// hashes recorded for their current secrets, plus the controller's account
// on an external broker.
func (f *exportingFleet) ExportMosquitto(ctx context.Context) ([]byte, []byte, []string, error) {
	accts, hashes, supers, err := f.exportInputs(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	files, err := mosquittoexport.Render(accts, hashes, supers...)
	if err != nil {
		return nil, nil, nil, err
	}
	return files.PasswordFile, files.ACLFile, files.Skipped, nil
}

// exportInputs gathers what both Mosquitto exports render: the registry's
// and the local accounts, the hashes recorded for their current secrets, and
// the controller's account on an external broker.
func (f *exportingFleet) exportInputs(ctx context.Context) ([]broker.Account, map[string]string, []mosquittoexport.Superuser, error) {
	accts, err := exportAccounts(ctx, f.store)
	if err != nil {
		return nil, nil, nil, err
	}
	recorded, err := f.store.ExportHashes(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	hashes := map[string]string{}
	for _, a := range accts {
		if h, ok := recorded[a.Username]; ok && h.SecretHash == a.SecretHash {
			hashes[a.Username] = h.Mosquitto
		}
	}
	// Local credentials keep their plain secrets on disk: hash them now.
	seen := map[string]bool{}
	for _, a := range accts {
		seen[a.Username] = true
	}
	la, err := f.local.Accounts()
	if err != nil {
		return nil, nil, nil, err
	}
	secrets := map[string]string{}
	for _, c := range f.localCredentials() {
		secrets[c.Username] = c.Password
	}
	for _, a := range la {
		if seen[a.Username] || secrets[a.Username] == "" {
			continue // a registry account shadows a local one
		}
		accts = append(accts, a)
		if hashes[a.Username], err = mosquittoexport.Hash(secrets[a.Username]); err != nil {
			return nil, nil, nil, err
		}
	}
	var supers []mosquittoexport.Superuser
	if f.ext != nil && f.ext.flags.username != "" && f.ext.flags.password != "" {
		h, err := mosquittoexport.Hash(f.ext.flags.password)
		if err != nil {
			return nil, nil, nil, err
		}
		supers = append(supers, mosquittoexport.Superuser{Username: f.ext.flags.username, Hash: h})
	}
	return accts, hashes, supers, nil
}

func (f *exportingFleet) localCredentials() []configs.Credential {
	cs := []configs.Credential{f.local.Observer, f.local.Operator}
	if d := f.local.Device; d != nil {
		cs = append(cs, configs.Credential{Username: d.Username, Password: d.Password})
	}
	return cs
}

// exportAccounts lists the registry's accounts as the controller builds them.
func exportAccounts(ctx context.Context, st *sqlite.DB) ([]broker.Account, error) {
	devs, err := st.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		return nil, err
	}
	ints, err := st.ListIntegrations(ctx)
	if err != nil {
		return nil, err
	}
	ops, err := st.ListOperators(ctx)
	if err != nil {
		return nil, err
	}
	var accts []broker.Account
	for _, d := range devs {
		accts = append(accts, broker.DeviceAccount(d.ID, d.SecretHash, d.SkillKey, d.KeyVersion))
	}
	for _, i := range ints {
		accts = append(accts, broker.IntegrationAccount(i.Name, i.SecretHash, i.Allow...))
	}
	for _, o := range ops {
		accts = append(accts, broker.OperatorAccount(o.Name, o.SecretHash))
	}
	return accts, nil
}

func (f *exportingFleet) auth() external.Auth {
	return external.Auth{Table: f.ext.adapter.Table,
		Super: external.Superuser{Username: f.ext.flags.username, Password: f.ext.flags.password}}
}

// BrokerAuthSecret is empty (the endpoints are off) on the embedded broker.
func (f *exportingFleet) BrokerAuthSecret() string {
	if f.ext == nil {
		return ""
	}
	return f.ext.flags.authSecret
}

func (f *exportingFleet) BrokerAuthenticate(username, password string) (bool, bool) {
	return f.auth().Authenticate(username, password)
}

func (f *exportingFleet) BrokerAuthorize(username, topic, action string, retain bool) bool {
	return f.auth().Authorize(username, topic, action, retain)
}

// brokerStats is the embedded broker's counters for metrics; nil on an
// external broker, whose counters are its own.
func (g *gatewayRun) brokerStats() func() broker.Stats {
	if g.ext != nil {
		return nil
	}
	return g.broker.Stats
}
