package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server certificate made by the CA verifies against it for each host
// (names and addresses) and for nothing else; the CA signs leaves only.
func TestServerCertVerifiesAgainstTheCA(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	caPEM, caKey, err := MakeCA("test CA", now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := tls.X509KeyPair(caPEM, caKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := MakeServerCert(ca, []string{"gw.home.arpa", "198.18.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(leaf.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, host := range []string{"gw.home.arpa", "198.18.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.home.arpa", CurrentTime: now}); err == nil {
		t.Error("verified for a host it was not made for")
	}
	caCert, _ := x509.ParseCertificate(ca.Certificate[0])
	if !caCert.IsCA || !caCert.MaxPathLenZero {
		t.Errorf("CA: IsCA %v, MaxPathLenZero %v; want a CA that signs leaves only", caCert.IsCA, caCert.MaxPathLenZero)
	}
}

// Bad hosts are refused by name, and nothing is made.
func TestServerCertRefusesBadHosts(t *testing.T) {
	caPEM, caKey, _ := MakeCA("test CA", time.Now())
	ca, _ := tls.X509KeyPair(caPEM, caKey)
	for _, hosts := range [][]string{{"bad host"}, {"-lead.example"}, {}} {
		if c, _, err := MakeServerCert(ca, hosts, time.Now()); err == nil || c != nil {
			t.Errorf("hosts %q: made a certificate (err %v)", hosts, err)
		}
	}
}

// The key is 0600; an existing pair is kept unless forced.
func TestWritePairModesAndForce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := WritePair(dir, "c.pem", "k.pem", []byte("cert"), []byte("key"), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "k.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	err := WritePair(dir, "c.pem", "k.pem", []byte("cert2"), []byte("key2"), false)
	if err == nil || !strings.Contains(err.Error(), "force") {
		t.Fatalf("second write without force: %v, want a refusal naming --force", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "k.pem")); string(b) != "key" {
		t.Fatalf("the refused write changed the key: %q", b)
	}
	if err := WritePair(dir, "c.pem", "k.pem", []byte("cert2"), []byte("key2"), true); err != nil {
		t.Fatal(err)
	}
}
