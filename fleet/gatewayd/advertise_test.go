package gatewayd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/gatewayd/gatewaydtest"
	"github.com/chorus-edge/chorus/gateway/advertise"
	"github.com/chorus-edge/chorus/gateway/dirlock"
)

// lan is a host whose routable address is 198.18.0.7 on eth0.
var lan = advertise.Host{
	Interfaces: func() ([]advertise.Iface, error) {
		return []advertise.Iface{{Name: "eth0", Up: true, Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.7")}}}, nil
	},
	Hostname: func() (string, error) { return "gw", nil },
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(rawURL[strings.Index(rawURL, "://")+3:])
	if err != nil {
		t.Fatalf("%s: %v", rawURL, err)
	}
	return p
}

// A gateway listening on wildcards hands devices its routable address, not
// [::] or 0.0.0.0 (issue 16, point 1), and up.json says which it hands out.
func TestCredentialsCarryTheAdvertisedAddress(t *testing.T) {
	cfg := gatewaydtest.Loopback(t)
	cfg.Broker.MQTTListen, cfg.HTTP.Listen = "0.0.0.0:0", "[::]:0"
	m := gatewaydtest.Start(t, gatewayd.Config{Config: cfg, Host: lan})
	up := m.Up()
	wantMQTT := "mqtt://198.18.0.7:" + port(t, up.MQTTURL)
	wantHTTP := "http://198.18.0.7:" + port(t, up.HTTPURL)
	if up.AdvertiseMQTTURL != wantMQTT || up.AdvertiseHTTPURL != wantHTTP {
		t.Fatalf("advertised %q %q, want %q %q", up.AdvertiseMQTTURL, up.AdvertiseHTTPURL, wantMQTT, wantHTTP)
	}
	c, err := fleetclient.New(fleetclient.Config{BaseURL: "http://127.0.0.1:" + port(t, up.HTTPURL), Token: m.Token()})
	if err != nil {
		t.Fatal(err)
	}
	enr, err := c.AddDevice(context.Background(), "pi-kitchen", nil)
	if err != nil {
		t.Fatal(err)
	}
	if enr.Credentials.MQTTURL != wantMQTT || enr.Credentials.ServerURL != wantHTTP {
		t.Fatalf("credentials carry %q %q, want %q %q", enr.Credentials.MQTTURL, enr.Credentials.ServerURL, wantMQTT, wantHTTP)
	}
}

// Explicit addresses win, a bare host takes the listener's port, and TLS
// listeners advertise mqtts:// and https://.
func TestExplicitAdvertiseAndTLS(t *testing.T) {
	cfg := gatewaydtest.Loopback(t)
	cert, key := selfSigned(t)
	cfg.Broker.TLS = configs.TLS{CertFile: cert, KeyFile: key}
	cfg.HTTP.TLS = configs.TLS{CertFile: cert, KeyFile: key}
	cfg.Broker.Advertise, cfg.HTTP.Advertise = "gw.example", "https://gw.example"
	m := gatewaydtest.Start(t, gatewayd.Config{Config: cfg, Host: lan})
	up := m.Up()
	if want := "mqtts://gw.example:" + port(t, up.MQTTURL); up.AdvertiseMQTTURL != want {
		t.Errorf("mqtt advertised %q, want %q", up.AdvertiseMQTTURL, want)
	}
	if up.AdvertiseHTTPURL != "https://gw.example" {
		t.Errorf("http advertised %q, want https://gw.example", up.AdvertiseHTTPURL)
	}

	cfg2 := gatewaydtest.Loopback(t)
	cfg2.Broker.TLS, cfg2.HTTP.TLS = cfg.Broker.TLS, cfg.HTTP.TLS
	cfg2.Broker.MQTTListen, cfg2.HTTP.Listen = "0.0.0.0:0", "0.0.0.0:0"
	up = gatewaydtest.Start(t, gatewayd.Config{Config: cfg2, Host: lan}).Up()
	if !strings.HasPrefix(up.AdvertiseMQTTURL, "mqtts://198.18.0.7:") || !strings.HasPrefix(up.AdvertiseHTTPURL, "https://198.18.0.7:") {
		t.Errorf("TLS on wildcards advertised %q %q, want mqtts:// and https:// on 198.18.0.7", up.AdvertiseMQTTURL, up.AdvertiseHTTPURL)
	}
}

// A second gateway on a data dir in use fails, naming the holder, and
// changes nothing: up.json stays the first one's.
func TestSecondGatewayOnADataDirIsRefused(t *testing.T) {
	cfg := gatewaydtest.Loopback(t)
	first := gatewaydtest.Start(t, gatewayd.Config{Config: cfg})
	second := *cfg
	second.Broker.MQTTListen, second.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	m := gatewayd.New(gatewayd.Config{Config: &second, LocalDevice: "pi"})
	err := m.Run(context.Background())
	var held *dirlock.HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.What != "chorus gateway" {
		t.Fatalf("second Run = %v, want a HeldError naming this pid and chorus gateway", err)
	}
	up, err := configs.ReadUp(configs.UpPath(cfg.DataDir))
	if err != nil || up.HTTPURL != first.Up().HTTPURL {
		t.Fatalf("up.json = %+v (%v), want the first gateway's", up, err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"gw.example"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
