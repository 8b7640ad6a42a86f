package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/bridge"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// Bridge configures the bus relay between satellites and hubs and the topic
// migration twins (docs/bridging.md, gateway/bridge). The zero value relays
// the routes in the store with twins off.
type Bridge struct {
	Disabled bool // no relay: routes are kept but nothing crosses, no twins

	// Twins is "off", "legacy-to-v1" or "both" for every device bus;
	// TwinsByDevice overrides it per device (BUS.md §5).
	Twins         string
	TwinsByDevice map[string]string

	Grace     time.Duration // offline satellite grace period (30s)
	Hold      int           // outbound messages held per offline satellite (64)
	Rate      float64       // inbound messages a second per route (10)
	Burst     int           // inbound burst per route (20)
	BySession bool          // also relay hub messages by the satellite's session

	Now  func() time.Time // default: Config.Now
	Tick time.Duration    // grace sweep period (1s)
}

// relayRun is the controller's relay, nil when disabled or not started.
type relayRun struct {
	relay *bridge.Relay
}

// startRelay starts the relay over the broker's inline client and hands it
// the routes. Inline publishes bypass the ACL: the relay is the policy.
func (c *Controller) startRelay(ctx context.Context) error {
	b := c.cfg.Bridge
	if b.Disabled {
		return nil
	}
	byDev := map[string]bridge.TwinMode{}
	for dev, m := range b.TwinsByDevice {
		byDev[dev] = bridge.TwinMode(m)
	}
	now := b.Now
	if now == nil {
		now = c.cfg.Now
	}
	r, err := bridge.New(bridge.Config{
		// The relay only queues on the publisher's goroutine.
		Transport: bus.Direct(c.cfg.Broker), Logger: c.log.With("component", "bridge"), Now: now,
		Grace: b.Grace, Hold: b.Hold, Rate: b.Rate, Burst: b.Burst, Tick: b.Tick, BySession: b.BySession,
		Twins: bridge.TwinMode(b.Twins), TwinsByDevice: byDev,
	})
	if err != nil {
		return err
	}
	routes, err := c.relayRoutes(ctx)
	if err != nil {
		return err
	}
	r.SetRoutes(routes)
	if err := r.Start(ctx); err != nil {
		return err
	}
	c.relay.relay = r
	return nil
}

func (c *Controller) stopRelay() {
	if c.relay.relay != nil {
		c.relay.relay.Close()
	}
}

// routeStore is the store's RouteService, or nil when it keeps no routes.
func (c *Controller) routeStore() (fleet.RouteService, error) {
	rs, ok := c.store.(fleet.RouteService)
	if !ok {
		return nil, fleet.Errorf(fleet.EINTERNAL, "this fleet store keeps no routes")
	}
	return rs, nil
}

// relayRoutes reads the routes in the relay's terms.
func (c *Controller) relayRoutes(ctx context.Context) ([]bridge.Route, error) {
	rs, err := c.routeStore()
	if err != nil {
		return nil, nil // routes are optional for a store
	}
	list, err := rs.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	out := make([]bridge.Route, 0, len(list))
	for _, r := range list {
		out = append(out, bridge.Route{Satellite: r.Satellite, Hub: r.Hub, Allow: r.Allow,
			BlacklistedSkills: r.BlacklistedSkills, BlacklistedIntents: r.BlacklistedIntents})
	}
	return out, nil
}

// routesChanged hands the relay the routes as stored now; a route that is
// gone is the satellite's departure. Called after every route change and
// after a device removal (whose routes the store removed with it), before
// the device's retained topics are cleared, so the relay still knows the
// departed satellite's skills.
func (c *Controller) routesChanged(ctx context.Context) {
	if c.relay.relay == nil {
		return
	}
	routes, err := c.relayRoutes(ctx)
	if err != nil {
		c.log.Error("bridge: reload routes", "error", err)
		return
	}
	c.relay.relay.SetRoutes(routes)
}

// PutRoute creates or replaces the route of r.Satellite. The relay applies
// it to every message offered after PutRoute returns.
func (c *Controller) PutRoute(ctx context.Context, actor string, r *fleet.Route) (*fleet.Route, error) {
	rs, err := c.routeStore()
	if err != nil {
		return nil, err
	}
	if err := rs.PutRoute(ctx, r); err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "route.put", "device/"+r.Satellite, map[string]any{"hub": r.Hub, "allow": r.Allow,
		"blacklisted_skills": r.BlacklistedSkills, "blacklisted_intents": r.BlacklistedIntents})
	c.routesChanged(ctx)
	return r, nil
}

// ListRoutes returns every route.
func (c *Controller) ListRoutes(ctx context.Context) ([]*fleet.Route, error) {
	rs, err := c.routeStore()
	if err != nil {
		return nil, err
	}
	return rs.ListRoutes(ctx)
}

// RemoveRoute removes a satellite's route: its final departure from the hub.
func (c *Controller) RemoveRoute(ctx context.Context, actor, satellite string) error {
	rs, err := c.routeStore()
	if err != nil {
		return err
	}
	if err := rs.DeleteRoute(ctx, satellite); err != nil {
		return err
	}
	c.audit(ctx, actor, "route.remove", "device/"+satellite, nil)
	c.routesChanged(ctx)
	return nil
}

// RelayStats returns the relay's counters (zero when it is not running).
func (c *Controller) RelayStats() bridge.Stats {
	if c.relay.relay == nil {
		return bridge.Stats{}
	}
	return c.relay.relay.Stats()
}
