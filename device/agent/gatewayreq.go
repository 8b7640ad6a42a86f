package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// gatewayClient makes the agent's one call to the gateway's fleet API:
// POST /v1/device/skills (docs/api.md), with the device's own credentials
// as HTTP Basic auth. device/ does not import fleet (ARCHITECTURE.md §2),
// so the few lines of wire live here.
type gatewayClient struct {
	base, user, pass string
	hc               *http.Client
}

// maxGatewayAnswer caps the answer read: one desired document.
const maxGatewayAnswer = 4 << 20

func newGatewayClient(base, user, pass string) *gatewayClient {
	return &gatewayClient{base: strings.TrimRight(base, "/"), user: user, pass: pass,
		hc: &http.Client{Timeout: 30 * time.Second}}
}

// gatewayError is the API's {"error": {"code", "message"}} answer.
type gatewayError struct {
	Status  int
	Code    string
	Message string
}

func (e *gatewayError) Error() string {
	return fmt.Sprintf("gateway answered %d %s: %s", e.Status, e.Code, e.Message)
}

// packageProblem: the gateway refused the named skills (unknown, or not a
// skill id), not the device or itself.
func (e *gatewayError) packageProblem() bool {
	return e.Code == "not_found" || e.Code == "invalid"
}

// requestSkills asks for device-level install or uninstall assignments of
// packages and returns the desired version that holds the change.
func (g *gatewayClient) requestSkills(ctx context.Context, action string, packages []string) (int64, error) {
	if g.base == "" {
		return 0, errors.New("no gateway server URL configured")
	}
	body, err := json.Marshal(map[string]any{"action": action, "packages": packages})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/device/skills", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("device skills request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(g.user, g.pass)
	resp, err := g.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("device skills request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayAnswer))
	if err != nil {
		return 0, fmt.Errorf("device skills request: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, decodeGatewayError(resp.StatusCode, raw)
	}
	var out struct {
		DesiredVersion int64 `json:"desired_version"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, fmt.Errorf("device skills request: unreadable answer: %w", err)
	}
	return out.DesiredVersion, nil
}

func decodeGatewayError(status int, raw []byte) error {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
		return &gatewayError{Status: status, Message: http.StatusText(status)}
	}
	return &gatewayError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
}
