package broker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// selfSigned returns a server certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chorus-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestTLSListener(t *testing.T) {
	cert, pool := selfSigned(t)
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}, dev.Account)
	if got := b.URL(); got[:8] != "mqtts://" {
		t.Fatalf("URL = %s", got)
	}
	conn, err := tls.Dial("tcp", b.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: "pi-1", CleanStart: true, KeepAlive: 30,
		Username: "pi-1", UsernameFlag: true, Password: []byte(dev.Secret), PasswordFlag: true})
	if err != nil || ca.ReasonCode != 0 {
		t.Fatalf("connect over TLS: %v %+v", err, ca)
	}
	_ = c.Disconnect(&paho.Disconnect{})

	// A plain-text client gets nowhere.
	if _, err := brokertest.Connect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/plain"}); err == nil {
		t.Fatal("plain MQTT connected to a TLS listener")
	}
}
