package fleetclient

import (
	"context"
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// Routes lists the bridging routes (docs/bridging.md), by satellite.
func (c *Client) Routes(ctx context.Context) ([]fleet.Route, error) {
	var out api.RoutesResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/routes", out: &out})
	return out.Routes, err
}

// PutRoute creates or replaces the route of r.Satellite.
func (c *Client) PutRoute(ctx context.Context, r fleet.Route) (fleet.Route, error) {
	var out api.RouteResponse
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/routes/" + seg(r.Satellite), json: api.NewRouteRequest(r), out: &out})
	return out.Route, err
}

// RemoveRoute deletes a satellite's route.
func (c *Client) RemoveRoute(ctx context.Context, satellite string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/routes/" + seg(satellite)})
}
