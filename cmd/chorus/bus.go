//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// busDialTimeout bounds how long `chorus bus` waits for the broker.
const busDialTimeout = 10 * time.Second

// busFlags are the connection flags every `chorus bus` command shares. What
// they leave unset comes from up.json in the data dir (operator credentials,
// mqtt_url, the local device), so the commands work next to `chorus up`.
type busFlags struct {
	mqttURL, username, password string
	device, dataDir             string
}

// busConn is where and as whom to connect, once flags and up.json are merged.
type busConn struct {
	url, username, password, device string
}

func (a *app) newBusCmd() *cobra.Command {
	f := &busFlags{}
	cmd := &cobra.Command{
		Use:   "bus",
		Short: "Watch, send and request OVOS messages on a device's MQTT bus",
		Long: "Watch, send and request OVOS messages on a device's MQTT bus (chorus/v1/<device>/bus/<type>).\n" +
			"Without --mqtt-url, --username or --device the missing values come from up.json in --data-dir:\n" +
			"the operator credentials, the broker URL and the local device written by `chorus up`.",
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.mqttURL, "mqtt-url", "", "broker URL: mqtt://, mqtts://, ws:// or wss:// (default: up.json's)")
	fl.StringVar(&f.username, "username", "", "MQTT username (default: up.json's operator)")
	fl.StringVar(&f.password, "password", "", "MQTT password (default: up.json's operator)")
	fl.StringVar(&f.device, "device", "", "device id (default: up.json's local device)")
	fl.StringVar(&f.dataDir, "data-dir", configs.DefaultDataDir, "directory holding up.json")
	cmd.AddCommand(a.newBusListenCmd(f), a.newBusSendCmd(f), a.newBusRequestCmd(f))
	return cmd
}

// resolve merges the flags with up.json. up.json is read only when a value is
// missing, and its absence is an error only when it leaves the URL or a
// needed device unset.
func (f *busFlags) resolve(needDevice bool) (busConn, error) {
	c := busConn{url: f.mqttURL, username: f.username, password: f.password, device: f.device}
	if c.url != "" && c.username != "" && (c.device != "" || !needDevice) {
		return c, nil
	}
	path := configs.UpPath(f.dataDir)
	up, err := configs.ReadUp(path)
	if err != nil && !errors.Is(err, configs.ErrNoUpFile) {
		return c, err
	}
	if c.url == "" {
		c.url = up.MQTTURL
	}
	if c.username == "" {
		c.username = up.Operator.Username
		if c.password == "" {
			c.password = up.Operator.Password
		}
	}
	if c.device == "" {
		c.device = up.Device
	}
	switch {
	case c.url == "" && err != nil:
		return c, err // says: no up.json, run `chorus up` or pass --mqtt-url and credentials
	case c.url == "":
		return c, fmt.Errorf("%s has no mqtt_url: pass --mqtt-url", path)
	case needDevice && c.device == "" && err != nil:
		return c, errors.New("no device: pass --device ID")
	case needDevice && c.device == "":
		return c, fmt.Errorf("no device: pass --device ID (%s names no local device)", path)
	}
	return c, nil
}

func (a *app) dialBus(ctx context.Context, c busConn) (*bus.MQTT, error) {
	ctx, cancel := context.WithTimeout(ctx, busDialTimeout)
	defer cancel()
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{
		URL: c.url, Username: c.username, Password: c.password, CleanStart: true, Logger: a.log,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// busClient connects and returns a Client for c.device; close it with the
// returned func.
func (a *app) busClient(ctx context.Context, c busConn) (*bus.Client, func(), error) {
	m, err := a.dialBus(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	cl, err := bus.New(bus.Config{Transport: m, Device: c.device, Logger: a.log})
	if err != nil {
		_ = m.Close()
		return nil, nil, err
	}
	return cl, func() { _ = cl.Close(); _ = m.Close() }, nil
}

func (a *app) newBusListenCmd(f *busFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "listen [TYPE...]",
		Short: "Print each message on the bus as one JSON line until interrupted",
		Long: "Print each message on the device's bus (only the given types, if any) as one JSON line:\n" +
			`{"device":…,"type":…,"data":…,"context":…}. --all (or --device +) listens to every device.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			every := all || f.device == topic.AnyDevice
			conn, err := f.resolve(!every)
			if err != nil {
				return err
			}
			if every {
				conn.device = topic.AnyDevice
			}
			filters, err := listenFilters(conn.device, args)
			if err != nil {
				return err
			}
			return a.listen(cmd.Context(), conn, filters)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "listen to every device's bus (same as --device +)")
	return cmd
}

func listenFilters(device string, types []string) ([]string, error) {
	if len(types) == 0 {
		if device == topic.AnyDevice {
			return []string{topic.AllBus}, nil
		}
		f, err := topic.BusFilter(device)
		return []string{f}, err
	}
	var out []string
	for _, t := range types {
		f, err := topic.BusTypeFilter(device, t)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, f) { // overlapping filters would print twice
			out = append(out, f)
		}
	}
	return out, nil
}

func (a *app) listen(ctx context.Context, conn busConn, filters []string) error {
	m, err := a.dialBus(ctx, conn)
	if err != nil {
		return err
	}
	defer m.Close()
	p := &linePrinter{w: a.stdout}
	for _, f := range filters {
		if _, err := m.Subscribe(ctx, f, a.printDelivery(p)); err != nil {
			return err
		}
	}
	a.log.Info("bus listen: subscribed", "filters", filters)
	<-ctx.Done()
	return nil
}

// printDelivery prints each valid bus message; malformed ones are logged
// and skipped, retained ones ignored (a bus message is never retained).
func (a *app) printDelivery(p *linePrinter) func(bus.Packet) {
	return func(pk bus.Packet) {
		d, err := bus.ParseDelivery(pk)
		switch {
		case errors.Is(err, bus.ErrRetained):
			return
		case err != nil:
			a.log.Warn("bus listen: malformed message skipped", "topic", pk.Topic, "err", err)
			return
		}
		if err := p.print(d); err != nil {
			a.log.Warn("bus listen: print", "err", err)
		}
	}
}

// linePrinter writes one JSON object per line; it is safe for concurrent use.
type linePrinter struct {
	mu sync.Mutex
	w  io.Writer
}

type busLine struct {
	Device  string         `json:"device"`
	Type    string         `json:"type"`
	Data    map[string]any `json:"data"`
	Context map[string]any `json:"context"`
}

func (p *linePrinter) print(d bus.Delivery) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	line := busLine{Device: d.Device, Type: d.Message.Type, Data: d.Message.Data, Context: d.Message.Context}
	if line.Data == nil {
		line.Data = map[string]any{}
	}
	if line.Context == nil {
		line.Context = map[string]any{}
	}
	if err := enc.Encode(line); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(buf.Bytes())
	return err
}

// messageFlags are --data and --context of send and request.
type messageFlags struct{ data, context string }

func (m *messageFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.data, "data", "{}", "message data, a JSON object")
	cmd.Flags().StringVar(&m.context, "context", "{}", "message context, a JSON object")
}

// message builds and validates the Message before anything connects.
func (m *messageFlags) message(msgType string) (envelope.Message, error) {
	data, err := jsonObject("--data", m.data)
	if err != nil {
		return envelope.Message{}, err
	}
	ctx, err := jsonObject("--context", m.context)
	if err != nil {
		return envelope.Message{}, err
	}
	msg := envelope.Message{Type: msgType, Data: data, Context: ctx}
	raw, err := envelope.Encode(msg)
	if err != nil {
		return msg, err
	}
	return envelope.Decode(raw) // MSG-1's checks: finite numbers, depth
}

func jsonObject(flag, s string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%s %q: not a JSON object: %w", flag, s, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s %q: not a JSON object: trailing data", flag, s)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s %q: not a JSON object", flag, s)
	}
	return obj, nil
}

func (a *app) newBusSendCmd(f *busFlags) *cobra.Command {
	var mf messageFlags
	cmd := &cobra.Command{
		Use:   "send TYPE",
		Short: "Publish one message on the device's bus",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := mf.message(args[0])
			if err != nil {
				return err
			}
			conn, err := f.resolve(true)
			if err != nil {
				return err
			}
			c, closeBus, err := a.busClient(cmd.Context(), conn)
			if err != nil {
				return err
			}
			defer closeBus()
			ctx, cancel := context.WithTimeout(cmd.Context(), busDialTimeout)
			defer cancel()
			return c.Emit(ctx, msg)
		},
	}
	mf.register(cmd)
	return cmd
}

func (a *app) newBusRequestCmd(f *busFlags) *cobra.Command {
	var (
		mf        messageFlags
		replyType string
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "request TYPE",
		Short: "Publish a message and print its reply as one JSON line",
		Long: "Publish a message and print its reply (type --reply, default TYPE.response) as one JSON line.\n" +
			"Exits 1 when no reply arrives within --timeout.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := mf.message(args[0])
			if err != nil {
				return err
			}
			if replyType == "" {
				replyType = msg.Type + ".response"
			}
			conn, err := f.resolve(true)
			if err != nil {
				return err
			}
			c, closeBus, err := a.busClient(cmd.Context(), conn)
			if err != nil {
				return err
			}
			defer closeBus()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			d, err := c.Request(ctx, msg, replyType)
			if errors.Is(err, bus.ErrNoReply) && errors.Is(err, context.DeadlineExceeded) {
				return &exitError{code: 1, err: fmt.Errorf("no reply of type %s from device %s within %s", replyType, conn.device, timeout)}
			}
			if err != nil {
				return err
			}
			return (&linePrinter{w: a.stdout}).print(d)
		},
	}
	mf.register(cmd)
	cmd.Flags().StringVar(&replyType, "reply", "", "reply type (default TYPE.response)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the reply")
	return cmd
}
