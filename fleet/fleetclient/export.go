package fleetclient

import (
	"context"
	"encoding/json"
	"net/http"
)

// MosquittoExport is GET /v1/export/mosquitto: a Mosquitto 2 password file
// and ACL file for the fleet, and the accounts they could not express.
type MosquittoExport struct {
	PasswordFile string   `json:"password_file"`
	ACLFile      string   `json:"acl_file"`
	Skipped      []string `json:"skipped"`
}

// MosquittoDynSec is GET /v1/export/mosquitto/dynsec: the config file of
// Mosquitto's dynamic-security plugin and the accounts it could not express.
type MosquittoDynSec struct {
	DynamicSecurity json.RawMessage `json:"dynamic_security"`
	Skipped         []string        `json:"skipped"`
}

// ExportMosquittoDynSec fetches the fleet's dynamic-security file.
func (c *Client) ExportMosquittoDynSec(ctx context.Context) (MosquittoDynSec, error) {
	var out MosquittoDynSec
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/export/mosquitto/dynsec", out: &out})
	return out, err
}

// ExportMosquitto fetches the fleet's Mosquitto files.
func (c *Client) ExportMosquitto(ctx context.Context) (MosquittoExport, error) {
	var out MosquittoExport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/export/mosquitto", out: &out})
	return out, err
}
