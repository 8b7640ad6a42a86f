package gatewayd_test

import (
	"context"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
)

// A gateway runs in process, writes up.json and answers its API with the
// token it made; Close is idempotent.
func TestMainRunClose(t *testing.T) {
	cfg := gatewaydtest.Loopback(t)
	m := gatewayd.New(gatewayd.Config{Config: cfg, LocalDevice: "pi-local", Version: "test"})
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	up, err := configs.ReadUp(configs.UpPath(cfg.DataDir))
	if err != nil || !reflect.DeepEqual(up, m.Up()) || up.Device != "pi-local" || up.Agent == nil || !strings.HasPrefix(up.HTTPURL, "http://127.0.0.1:") {
		t.Fatalf("up.json = %+v (%v), Up() = %+v", up, err, m.Up())
	}
	c, err := fleetclient.New(fleetclient.Config{BaseURL: up.HTTPURL, Token: m.Token()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device(context.Background(), "pi-local")
	if err != nil || d.ID != "pi-local" {
		t.Fatalf("the local device is not registered: %+v (%v)", d, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Health(context.Background()); err == nil {
		t.Error("the API still answers after Close")
	}
}

// A start that fails half way (the HTTP port is taken) stops what it
// started: the broker's port is free again.
func TestMainRunFailsClean(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mqtt := free.Addr().String()
	free.Close()
	cfg := gatewaydtest.Loopback(t)
	cfg.Broker.MQTTListen, cfg.HTTP.Listen = mqtt, taken.Addr().String()
	m := gatewayd.New(gatewayd.Config{Config: cfg})
	if err := m.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen http") {
		t.Fatalf("Run = %v, want the HTTP listener's error", err)
	}
	ln, err := net.Listen("tcp", mqtt)
	if err != nil {
		t.Fatalf("the broker still holds %s: %v", mqtt, err)
	}
	ln.Close()
	if _, err := os.Stat(configs.UpPath(cfg.DataDir)); err == nil {
		t.Error("up.json written by a gateway that did not start")
	}
}
