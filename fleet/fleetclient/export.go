package fleetclient

import (
	"context"
	"net/http"

	"github.com/chorus-edge/chorus/fleet/api"
)

// ExportMosquittoDynSec fetches the fleet's dynamic-security file.
func (c *Client) ExportMosquittoDynSec(ctx context.Context) (api.MosquittoDynSec, error) {
	var out api.MosquittoDynSec
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/export/mosquitto/dynsec", out: &out})
	return out, err
}

// ExportMosquitto fetches the fleet's Mosquitto files.
func (c *Client) ExportMosquitto(ctx context.Context) (api.MosquittoExport, error) {
	var out api.MosquittoExport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/export/mosquitto", out: &out})
	return out, err
}
