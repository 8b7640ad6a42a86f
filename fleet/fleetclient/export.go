package fleetclient

import (
	"context"
	"net/http"
)

// MosquittoExport is GET /v1/export/mosquitto: a Mosquitto 2 password file
// and ACL file for the fleet, and the accounts they could not express.
type MosquittoExport struct {
	PasswordFile string   `json:"password_file"`
	ACLFile      string   `json:"acl_file"`
	Skipped      []string `json:"skipped"`
}

// ExportMosquitto fetches the fleet's Mosquitto files.
func (c *Client) ExportMosquitto(ctx context.Context) (MosquittoExport, error) {
	var out MosquittoExport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/export/mosquitto", out: &out})
	return out, err
}
