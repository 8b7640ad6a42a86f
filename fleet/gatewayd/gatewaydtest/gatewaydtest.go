// Package gatewaydtest starts a gateway process inside a test: a
// fleet/gatewayd.Main on loopback with a data directory of the test's own,
// closed when the test ends.
package gatewaydtest

import (
	"context"
	"testing"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
)

// Loopback is configs.Default() with the listeners on 127.0.0.1:0 and the
// data in a fresh t.TempDir().
func Loopback(t testing.TB) *configs.Config {
	t.Helper()
	cfg := configs.Default()
	cfg.DataDir, cfg.Broker.MQTTListen, cfg.HTTP.Listen = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	return &cfg
}

// Start runs a gateway for t (cfg.Config nil: Loopback) and closes it when
// t ends; a gateway that does not start fails t.
func Start(t testing.TB, cfg gatewayd.Config) *gatewayd.Main {
	t.Helper()
	if cfg.Config == nil {
		cfg.Config = Loopback(t)
	}
	m := gatewayd.New(cfg)
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
