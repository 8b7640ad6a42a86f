// Package fleetclient is a client of the gateway's HTTP API (docs/api.md),
// the API `chorus fleet` drives. It decodes into the wire types of fleet/api,
// the ones the server encodes, and returns the API's errors as *Error and
// transport failures as *UnreachableError; the wording shown to an operator
// is the CLI's business.
package fleetclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
)

// maxResponse caps a JSON answer; 10,000 devices fit many times over.
const maxResponse = 64 << 20

// DefaultTimeout bounds one request when Config.HTTPClient is nil. It is
// generous because publishing sends a whole archive.
const DefaultTimeout = 2 * time.Minute

// Config configures a Client. BaseURL is required; the rest has defaults.
type Config struct {
	BaseURL    string       // the gateway's HTTP URL, e.g. http://127.0.0.1:8080
	Token      string       // the operator token, sent as a bearer token
	HTTPClient *http.Client // default: an http.Client with DefaultTimeout
	UserAgent  string       // default: "chorus-fleet"
}

// Client calls the API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
	ua    string
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway URL %q: want http://host:port or https://host:port", cfg.BaseURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "chorus-fleet"
	}
	return &Client{base: u, token: cfg.Token, hc: cfg.HTTPClient, ua: cfg.UserAgent}, nil
}

// BaseURL is the gateway URL the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// Error is an error answered by the API: {"error": {"code", "message"}}.
// A reply that is not in that form gets an empty Code and a Message built
// from the HTTP status.
type Error struct {
	Status  int    // HTTP status
	Code    string // one of api's Code constants, "" when the reply was not the API's
	Message string
	// Credentials come with an add whose outcome the gateway could not
	// confirm (api.ErrorDetail.Credentials): keep them.
	Credentials *configs.AgentCredentials
}

func (e *Error) Error() string { return e.Message }

// IsCode reports whether err is an API *Error with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// UnreachableError means no HTTP answer came back: the gateway is not
// listening, the name does not resolve, the connection broke.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the gateway at %s: %v", e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// request is one call: a JSON body (or raw bytes with a content type) and
// where to decode the answer (nil: none expected).
type request struct {
	method, path string
	query        url.Values
	json         any
	raw          io.Reader
	rawType      string
	out          any
	bearer       string // sent instead of the operator token (a join poll secret)
}

func (c *Client) do(ctx context.Context, r request) error {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		return &UnreachableError{URL: c.base.String(), Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return &UnreachableError{URL: c.base.String(), Err: err}
	}
	if len(body) > maxResponse {
		return fmt.Errorf("%s %s: answer over %d bytes", r.method, r.path, maxResponse)
	}
	if resp.StatusCode >= 300 {
		return decodeError(resp, body)
	}
	if r.out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(body, r.out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", r.method, r.path, err)
	}
	return nil
}

func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	// r.path is escaped already (seg), so it is appended as text.
	u := c.base.String() + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	body, ctype := r.raw, r.rawType
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	switch {
	case r.bearer != "":
		req.Header.Set("Authorization", "Bearer "+r.bearer)
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// decodeError reads the API's error form, or describes a foreign reply
// (a proxy's 502 page, say) by its status and first line.
func decodeError(resp *http.Response, body []byte) error {
	var e api.ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		msg := e.Error.Message
		if msg == "" {
			msg = e.Error.Code
		}
		return &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: msg, Credentials: e.Error.Credentials}
	}
	msg := "HTTP " + resp.Status
	if line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n"); line != "" {
		if len(line) > 200 {
			line = line[:200] + "..."
		}
		msg += ": " + line
	}
	return &Error{Status: resp.StatusCode, Message: msg}
}

// unwrapURLError drops *url.Error's "Get "http://...":" prefix, since
// UnreachableError names the gateway already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
