//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
)

func runCert(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	code = a.execute(context.Background(), append([]string{"cert"}, args...))
	return code, out.String(), errb.String()
}

func mustRunCert(t *testing.T, args ...string) {
	t.Helper()
	if code, _, stderr := runCert(t, args...); code != 0 {
		t.Fatalf("chorus cert %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
}

// A home fleet's TLS from nothing: make a CA, a server certificate for the
// gateway's addresses, run the broker on it (as broker.tls does) and connect
// a client that trusts only ca.pem.
func TestCertBrokerTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caDir, srvDir := filepath.Join(dir, "ca"), filepath.Join(dir, "server")
	mustRunCert(t, "ca", "--out", caDir)
	mustRunCert(t, "server", "--ca", caDir, "--host", "127.0.0.1,gateway.local", "--host", "::1", "--out", srvDir)

	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(caDir, "ca.pem"), 0o644},
		{filepath.Join(caDir, "ca-key.pem"), 0o600},
		{filepath.Join(srvDir, "server.pem"), 0o644},
		{filepath.Join(srvDir, "server-key.pem"), 0o600},
	} {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.path, st.Mode().Perm(), f.mode)
		}
	}

	// The same loader the gateway uses for broker.tls and http.tls.
	tlsCfg, err := configs.TLS{CertFile: filepath.Join(srvDir, "server.pem"), KeyFile: filepath.Join(srvDir, "server-key.pem")}.Config()
	if err != nil {
		t.Fatal(err)
	}
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{TLS: tlsCfg}, dev.Account)

	caPEM, err := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	conn, err := tls.Dial("tcp", b.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS handshake trusting ca.pem: %v", err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: "pi-1", CleanStart: true, KeepAlive: 30,
		Username: "pi-1", UsernameFlag: true, Password: []byte(dev.Secret), PasswordFlag: true})
	if err != nil || ca.ReasonCode != 0 {
		t.Fatalf("MQTT connect over TLS: %v %+v", err, ca)
	}
	_ = c.Disconnect(&paho.Disconnect{})

	// The certificate names what --host gave, and nothing else verifies.
	leaf, err := x509.ParseCertificate(tlsCfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"127.0.0.1", "::1", "gateway.local"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("VerifyHostname(%s): %v", h, err)
		}
	}
	if err := leaf.VerifyHostname("evil.example"); err == nil {
		t.Error("certificate verifies for a host not given")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("chain to ca.pem: %v", err)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d < 729*24*time.Hour || d > 731*24*time.Hour {
		t.Errorf("server validity %s, want 2 years", d)
	}
}

func TestCertErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caDir, srvDir := filepath.Join(dir, "ca"), filepath.Join(dir, "server")
	mustRunCert(t, "ca", "--out", caDir)
	mustRunCert(t, "server", "--ca", caDir, "--host", "localhost", "--out", srvDir)
	// A server certificate is not a CA.
	notCA := filepath.Join(dir, "notca")
	if err := os.MkdirAll(notCA, 0o700); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{"server.pem": "ca.pem", "server-key.pem": "ca-key.pem"} {
		b, err := os.ReadFile(filepath.Join(srvDir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(notCA, to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ca without --out", []string{"ca"}, `"out" not set`},
		{"ca over an existing CA", []string{"ca", "--out", caDir}, "exists (use --force"},
		{"server without --host", []string{"server", "--ca", caDir, "--out", filepath.Join(dir, "s2")}, `"host" not set`},
		{"server with a bad host", []string{"server", "--ca", caDir, "--host", "bad host!", "--out", filepath.Join(dir, "s3")}, "not an IP address or DNS name"},
		{"server without a CA", []string{"server", "--ca", filepath.Join(dir, "none"), "--host", "x", "--out", filepath.Join(dir, "s4")}, "load CA"},
		{"server signed by a non-CA", []string{"server", "--ca", notCA, "--host", "x", "--out", filepath.Join(dir, "s5")}, "not a CA"},
		{"server over an existing one", []string{"server", "--ca", caDir, "--host", "x", "--out", srvDir}, "exists (use --force"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCert(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", code, stderr, tc.want)
			}
		})
	}
	// --force replaces, and the old CA key is gone only then.
	before, _ := os.ReadFile(filepath.Join(caDir, "ca-key.pem"))
	mustRunCert(t, "ca", "--out", caDir, "--force")
	after, _ := os.ReadFile(filepath.Join(caDir, "ca-key.pem"))
	if bytes.Equal(before, after) {
		t.Fatal("--force kept the old CA key")
	}
}
