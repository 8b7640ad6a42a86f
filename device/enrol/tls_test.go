package enrol_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/enrol"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
)

// caAndServer writes a CA and a server certificate for 127.0.0.1 signed by
// it, the server's file holding the chain (server, then CA), as
// docs/security.md "Join tokens" recommends; it returns the CA's DER.
func caAndServer(t *testing.T, dir string) (chainFile, keyFile string, caDER []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "gateway"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	chainFile, keyFile = filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "key.pem")
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	os.WriteFile(chainFile, chain, 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return chainFile, keyFile, caDER
}

// A gateway on HTTPS puts its CA's pin in the token; an agent that trusts
// nothing else joins with it, and one whose token has another pin is
// stopped before it sends anything.
func TestJoinOverPinnedTLS(t *testing.T) {
	t.Parallel()
	cfg := gatewaydtest.Loopback(t)
	var caDER []byte
	cfg.HTTP.TLS.CertFile, cfg.HTTP.TLS.KeyFile, caDER = caAndServer(t, t.TempDir())
	g := gatewaydtest.Start(t, gatewayd.Config{Config: cfg})
	// The operator's client here trusts the CA through the same pin.
	sum := sha256.Sum256(caDER)
	pin := hex.EncodeToString(sum[:])
	op, err := fleetclient.New(fleetclient.Config{BaseURL: g.Up().HTTPURL, Token: g.Token(), HTTPClient: enrol.PinnedHTTPClient(pin, "127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := op.CreateJoinToken(context.Background(), api.CreateJoinTokenRequest{Uses: 2, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := api.ParseJoinToken(out.Text)
	if err != nil || tok.CAPin != pin || !strings.HasPrefix(tok.URL, "https://") {
		t.Fatalf("token over TLS = %+v, %v; want the CA's pin %s and an https URL", tok, err, pin)
	}

	forged := tok
	forged.CAPin = strings.Repeat("0", 64)
	dir := t.TempDir()
	if _, err := enrol.Run(context.Background(), fastPoll(dir, forged.String(), "pi-f")); err == nil || !strings.Contains(err.Error(), "pin") {
		t.Fatalf("join with another pin: %v", err)
	}
	if ts, _ := op.JoinTokens(context.Background()); ts[0].Used != 0 {
		t.Fatalf("a join stopped by the pin reached the gateway: %+v", ts[0])
	}
	creds, err := enrol.Run(context.Background(), fastPoll(t.TempDir(), out.Text, "pi-tls"))
	if err != nil || creds.Device != "pi-tls" {
		t.Fatalf("join over pinned TLS: %+v, %v", creds, err)
	}
}

// The pinned check names the host dialled, also for an address (for which
// Go sends no SNI and leaves ConnectionState.ServerName empty): a
// certificate the pinned CA made for another address is refused.
func TestVerifyPinnedChecksTheAddress(t *testing.T) {
	t.Parallel()
	certFile, keyFile, caDER := caAndServer(t, t.TempDir())
	chain, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var cs tls.ConnectionState
	for _, der := range chain.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		cs.PeerCertificates = append(cs.PeerCertificates, c)
	}
	sum := sha256.Sum256(caDER)
	pin := hex.EncodeToString(sum[:])
	if err := enrol.VerifyPinned(cs, pin, "127.0.0.1"); err != nil {
		t.Fatalf("the address the certificate names: %v", err)
	}
	if err := enrol.VerifyPinned(cs, pin, "198.18.0.9"); err == nil || !strings.Contains(err.Error(), "198.18.0.9") {
		t.Fatalf("another address: %v, want a refusal naming it", err)
	}
}
