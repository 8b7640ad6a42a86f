package dashboard_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/fleet/localauth"
)

// selfSigned writes a certificate for 127.0.0.1 and its key under dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chorus test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// Under TLS the session cookie is also Secure.
func TestSessionCookieSecureUnderTLS(t *testing.T) {
	cfg := gatewaydtest.Loopback(t)
	var pool *x509.CertPool
	cfg.HTTP.TLS.CertFile, cfg.HTTP.TLS.KeyFile, pool = selfSigned(t, t.TempDir())
	g := gatewaydtest.Start(t, gatewayd.Config{Config: cfg})
	base := g.Up().HTTPURL
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("HTTP URL %s: want https", base)
	}
	token, err := os.ReadFile(filepath.Join(g.DataDir(), localauth.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c := noRedirect(nil)
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {strings.TrimSpace(string(token))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign in under TLS: %d, cookies %+v: want one Secure, HttpOnly, SameSite=Strict cookie", resp.StatusCode, cs)
	}
}
