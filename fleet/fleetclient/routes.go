package fleetclient

import (
	"context"
	"net/http"
	"time"
)

// Route relays a satellite's bus to a hub's (docs/bridging.md).
type Route struct {
	Satellite          string    `json:"satellite"`
	Hub                string    `json:"hub"`
	Allow              []string  `json:"allow"`
	BlacklistedSkills  []string  `json:"blacklisted_skills"`
	BlacklistedIntents []string  `json:"blacklisted_intents"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// Routes lists the bridging routes.
func (c *Client) Routes(ctx context.Context) ([]Route, error) {
	var out struct {
		Routes []Route `json:"routes"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/routes", out: &out})
	return out.Routes, err
}

// PutRoute creates or replaces the route of r.Satellite.
func (c *Client) PutRoute(ctx context.Context, r Route) (Route, error) {
	body := map[string]any{"hub": r.Hub, "allow": orEmpty(r.Allow),
		"blacklisted_skills": orEmpty(r.BlacklistedSkills), "blacklisted_intents": orEmpty(r.BlacklistedIntents)}
	var out struct {
		Route Route `json:"route"`
	}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/routes/" + seg(r.Satellite), json: body, out: &out})
	return out.Route, err
}

// RemoveRoute deletes a satellite's route.
func (c *Client) RemoveRoute(ctx context.Context, satellite string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/routes/" + seg(satellite)})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
