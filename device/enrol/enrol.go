// Package enrol is the satellite's side of join-token enrolment (`chorus
// agent join TOKEN`, docs/install.md): it checks the gateway's TLS pin
// before sending anything, joins over HTTP, waits while an operator has not
// accepted it, and writes the agent's credentials file.
//
// What it keeps in <data-dir>/enrolment (0700; the data dir itself stays
// searchable for skills, docs/install.md):
//   - credentials.json (0600): the agent's credentials once enrolled; when
//     present, Run returns them without asking the gateway anything, so
//     `chorus agent join TOKEN` can be the command a service runs every boot.
//   - pending.json (0600): the pending enrolment's ticket while an
//     operator has not decided, so a restart goes on waiting instead of
//     spending another use of the token.
package enrol

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Where Run keeps its files: Dir under the data dir, 0700.
const (
	Dir             = "enrolment"
	CredentialsFile = "credentials.json"
	PendingFile     = "pending.json"
)

// Poll backoff while pending: it starts at PollMin and doubles up to
// PollMax (docs/install.md, "Waiting for accept").
const (
	DefaultPollMin = time.Second
	DefaultPollMax = 15 * time.Second
)

// remindEvery is how often a pending agent says again that it waits.
const remindEvery = 5 * time.Minute

// Config configures Run.
type Config struct {
	Token   string // the join token's text; unused when the data dir already holds credentials or a pending ticket
	DataDir string
	// Device is the device id to ask for ("" = this host's name, made a
	// valid id).
	Device           string
	PollMin, PollMax time.Duration
	Logger           *slog.Logger
}

// pending is join-pending.json.
type pending struct {
	URL    string            `json:"url"`
	CAPin  string            `json:"ca,omitempty"`
	Device string            `json:"device"`
	Ticket api.PendingTicket `json:"ticket"`
}

// CredentialsPath is where Run writes the credentials in dataDir.
func CredentialsPath(dataDir string) string { return filepath.Join(dataDir, Dir, CredentialsFile) }

// PendingPath is where Run keeps a pending enrolment's ticket in dataDir.
func PendingPath(dataDir string) string { return filepath.Join(dataDir, Dir, PendingFile) }

// Run returns the agent's credentials: those already in the data dir, or
// new ones from joining with cfg.Token (waiting, with bounded backoff,
// while the enrolment is pending). It returns when enrolled, on an error
// the operator must fix (the message says how), or when ctx ends.
func Run(ctx context.Context, cfg Config) (configs.AgentCredentials, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollMin <= 0 {
		cfg.PollMin = DefaultPollMin
	}
	if cfg.PollMax < cfg.PollMin {
		cfg.PollMax = max(DefaultPollMax, cfg.PollMin)
	}
	credsPath := CredentialsPath(cfg.DataDir)
	if _, err := os.Stat(credsPath); err == nil {
		cfg.Logger.Info("already enrolled: using the credentials file, not the token", "file", credsPath)
		return configs.ReadAgentCredentials(credsPath)
	}
	p, ok, err := readPending(cfg.DataDir)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	if !ok {
		return join(ctx, cfg)
	}
	if err := secureDir(filepath.Join(cfg.DataDir, Dir)); err != nil {
		return configs.AgentCredentials{}, err
	}
	cfg.Logger.Info("resuming a pending enrolment", "file", PendingPath(cfg.DataDir), "pending", p.Ticket.ID)
	return wait(ctx, cfg, p)
}

func join(ctx context.Context, cfg Config) (configs.AgentCredentials, error) {
	tok, err := api.ParseJoinToken(cfg.Token)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	device, err := deviceName(cfg.Device)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	c, err := Client(tok.URL, tok.CAPin)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	// The directory is made before the token is spent, so that what the
	// gateway answers can be kept; a refused join removes what it made.
	undo, err := makeDirs(cfg.DataDir)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	cfg.Logger.Info("joining the fleet", "gateway", tok.URL, "device", device, "token", tok.ID, "pinned", tok.CAPin != "")
	res, err := c.Join(ctx, api.JoinRequest{Token: tok.ID, Secret: tok.Secret, Device: device})
	if err != nil {
		undo()
		return configs.AgentCredentials{}, fmt.Errorf("join %s as %s: %w", tok.URL, device, err)
	}
	if res.Status == api.JoinAccepted && res.Credentials != nil {
		return save(cfg, *res.Credentials)
	}
	if res.Status != api.JoinPending || res.Pending == nil {
		return configs.AgentCredentials{}, fmt.Errorf("join %s: the gateway answered status %q without credentials or a pending ticket", tok.URL, res.Status)
	}
	p := pending{URL: tok.URL, CAPin: tok.CAPin, Device: device, Ticket: *res.Pending}
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := configs.WriteFileAtomic(PendingPath(cfg.DataDir), append(b, '\n'), 0o600); err != nil {
		return configs.AgentCredentials{}, fmt.Errorf("save the pending enrolment: %w", err)
	}
	return wait(ctx, cfg, p)
}

// wait polls a pending enrolment until it is accepted (credentials) or
// rejected (an error; the pending file is removed so a new token can be
// used), with backoff from PollMin to PollMax.
func wait(ctx context.Context, cfg Config, p pending) (configs.AgentCredentials, error) {
	c, err := Client(p.URL, p.CAPin)
	if err != nil {
		return configs.AgentCredentials{}, err
	}
	waiting := func() {
		cfg.Logger.Info(fmt.Sprintf("waiting for an operator to accept this device: run `chorus fleet device accept %s` on the gateway (or use the dashboard)", p.Ticket.ID),
			"device", p.Device, "pending", p.Ticket.ID)
	}
	waiting()
	lastSaid := time.Now()
	delay := cfg.PollMin
	for {
		if time.Since(lastSaid) >= remindEvery {
			waiting() // an operator reading the log later still finds what to do
			lastSaid = time.Now()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return configs.AgentCredentials{}, ctx.Err()
		case <-t.C:
		}
		res, err := c.PollJoin(ctx, p.Ticket)
		var unreachable *fleetclient.UnreachableError
		switch {
		case err == nil && res.Status == api.JoinAccepted && res.Credentials != nil:
			creds, err := save(cfg, *res.Credentials)
			if err == nil {
				_ = os.Remove(PendingPath(cfg.DataDir))
			}
			return creds, err
		case err == nil:
			cfg.Logger.Debug("still pending", "pending", p.Ticket.ID)
		case errors.As(err, &unreachable), fleetclient.IsCode(err, api.CodeRateLimited), fleetclient.IsCode(err, api.CodeUnavailable):
			cfg.Logger.Warn("cannot ask the gateway whether this device was accepted; retrying", "error", err, "retry_in", min(delay*2, cfg.PollMax))
		case ctx.Err() != nil:
			return configs.AgentCredentials{}, ctx.Err()
		default:
			if fleetclient.IsCode(err, api.CodeNotFound) || fleetclient.IsCode(err, api.CodeUnauthorized) {
				_ = os.Remove(PendingPath(cfg.DataDir))
			}
			return configs.AgentCredentials{}, fmt.Errorf("pending enrolment %s: %w", p.Ticket.ID, err)
		}
		delay = min(delay*2, cfg.PollMax)
	}
}

// save writes the credentials file (0600 in the 0700 data dir).
func save(cfg Config, c configs.AgentCredentials) (configs.AgentCredentials, error) {
	path := CredentialsPath(cfg.DataDir)
	if err := configs.WriteAgentCredentials(path, c); err != nil {
		return configs.AgentCredentials{}, fmt.Errorf("write the agent credentials: %w", err)
	}
	cfg.Logger.Info("enrolled: credentials written", "device", c.Device, "file", path)
	return configs.ReadAgentCredentials(path)
}

func readPending(dataDir string) (pending, bool, error) {
	path := PendingPath(dataDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return pending{}, false, nil
	}
	if err != nil {
		return pending{}, false, fmt.Errorf("read the pending enrolment: %w", err)
	}
	var p pending
	if err := json.Unmarshal(b, &p); err != nil || p.URL == "" || p.Ticket.ID == "" || p.Ticket.Secret == "" {
		return pending{}, false, fmt.Errorf("pending enrolment %s is damaged: remove it and join again with a new token", path)
	}
	return p, true, nil
}

// makeDirs makes the data dir and its enrolment dir (secureDir) and
// returns what removes those of them that did not exist before, when
// still empty.
func makeDirs(dataDir string) (undo func(), err error) {
	dir := filepath.Join(dataDir, Dir)
	var made []string
	for _, d := range []string{dataDir, dir} {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			made = append(made, d)
		}
	}
	if err := secureDir(dir); err != nil {
		return nil, err
	}
	return func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = os.Remove(made[i]) // only an empty directory goes
		}
	}, nil
}

// secureDir creates dir 0700 (its parents 0711, as the agent keeps the data
// dir), or narrows an existing one to 0700: it holds the agent's secrets
// (docs/security.md).
func secureDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%s is open to others and cannot be narrowed to 0700: %w", dir, err)
		}
	}
	return nil
}

// deviceName is the id to ask for: name, or this host's name made a valid id.
func deviceName(name string) (string, error) {
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("device name: pass --device NAME (no host name: %v)", err)
		}
		name = IDFromHostname(h)
	}
	if err := topic.ValidDeviceID(name); err != nil {
		return "", fmt.Errorf("%v: pass --device NAME", err)
	}
	return name, nil
}

// IDFromHostname lowercases h, keeps its first label and turns characters a
// device id may not hold into '-'.
func IDFromHostname(h string) string {
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "-")
	if len(s) > topic.MaxIDLen {
		s = s[:topic.MaxIDLen]
	}
	return s
}

// Client is an API client without operator token for baseURL, pinned to
// pin when it is set (PinnedHTTPClient).
func Client(baseURL, pin string) (*fleetclient.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if pin != "" {
		u, err := url.Parse(baseURL)
		if err != nil {
			return nil, fmt.Errorf("gateway URL %q: %w", baseURL, err)
		}
		hc = PinnedHTTPClient(pin, u.Hostname())
	}
	return fleetclient.New(fleetclient.Config{BaseURL: baseURL, HTTPClient: hc, UserAgent: "chorus-agent-join"})
}

// PinnedHTTPClient accepts a TLS server only when its chain holds the
// certificate whose SHA-256 is pin and the server's certificate verifies
// up to it for host (a name or an address), checked in the TLS handshake,
// before any request is sent.
func PinnedHTTPClient(pin, host string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by VerifyConnection's pinned check
		VerifyConnection:   func(cs tls.ConnectionState) error { return VerifyPinned(cs, pin, host) },
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// VerifyPinned checks a TLS server's chain against pin: some certificate of
// the chain has that SHA-256, and the leaf verifies up to it for host, the
// name or address dialled (cs.ServerName is empty for an address: Go sends
// no SNI for one, so it cannot stand in for host).
func VerifyPinned(cs tls.ConnectionState, pin, host string) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("gateway sent no certificate")
	}
	var anchor *x509.Certificate
	for _, c := range certs {
		sum := sha256.Sum256(c.Raw)
		if hex.EncodeToString(sum[:]) == pin {
			anchor = c
			break
		}
	}
	if anchor == nil {
		return fmt.Errorf("the gateway's certificate does not match the join token's CA pin %s…: this is not the gateway that made the token (or its certificate changed); ask the operator for a new token", pin[:12])
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(anchor)
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if host == "" {
		return errors.New("no gateway host to check its certificate for")
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: host}); err != nil {
		return fmt.Errorf("the gateway's certificate matches the pin but does not verify for %s: %w", host, err)
	}
	return nil
}
