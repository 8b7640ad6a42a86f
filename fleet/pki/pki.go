// Package pki makes what a home fleet needs for TLS without an outside CA:
// a private certificate authority and server certificates it signs
// (ECDSA P-256), written with the key files 0600. `chorus cert` is its
// command line.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// Validity of what `chorus cert` makes. Two years keeps a server certificate
// under the 825 days Apple clients accept for any TLS server certificate.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 2 * 365 * 24 * time.Hour
	clockSkew      = 5 * time.Minute // NotBefore is backdated for clients whose clock runs late
)

// File names in the directories `chorus cert` writes.
const (
	CACertFile     = "ca.pem"
	CAKeyFile      = "ca-key.pem"
	ServerCertFile = "server.pem"
	ServerKeyFile  = "server-key.pem"
)

// MakeCA returns a self-signed CA certificate and its key, PEM-encoded. It
// may sign only leaf certificates (path length 0).
func MakeCA(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Chorus"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return encodePair(der, key)
}

// MakeServerCert returns a TLS server certificate for hosts (DNS names or IP
// addresses) signed by ca, and its key, PEM-encoded.
func MakeServerCert(ca tls.Certificate, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if !caCert.IsCA {
		return nil, nil, errors.New("the --ca certificate is not a CA")
	}
	ips, names, err := splitHosts(hosts)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate server key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(serverValidity)
	if caCert.NotAfter.Before(notAfter) {
		notAfter = caCert.NotAfter // a certificate outliving its CA would fail early anyway
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: strings.TrimSpace(hosts[0]), Organization: []string{"Chorus"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names,
		IPAddresses:  ips,
		SubjectKeyId: keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign server certificate: %w", err)
	}
	return encodePair(der, key)
}

// splitHosts sorts --host values into IP addresses and DNS names, refusing
// what is neither.
func splitHosts(hosts []string) (ips []net.IP, names []string, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("--host: at least one DNS name or IP address")
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if !validDNSName(h) {
			return nil, nil, fmt.Errorf("--host %q: not an IP address or DNS name", h)
		}
		names = append(names, strings.ToLower(h))
	}
	return ips, names, nil
}

// validDNSName accepts letters, digits, '-' and dots, labels of 1-63
// characters, and a leading "*." wildcard.
func validDNSName(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return s, nil
}

// keyID is the subject key identifier: a hash of the public key (RFC 7093 §2 method 1 style).
func keyID(pub *ecdsa.PublicKey) []byte {
	b, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(b)
	return sum[:20]
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), nil
}

// WritePair writes a certificate (0644) and its key (0600) into dir. Without
// force it refuses to replace either file, so a CA key is never lost by a
// second run.
func WritePair(dir, certName, keyName string, certPEM, keyPEM []byte, force bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	if !force {
		for _, p := range []string{certPath, keyPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists (use --force to replace it)", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("check %s: %w", p, err)
			}
		}
	}
	if err := atomicfile.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(certPath, certPEM, 0o644)
}
