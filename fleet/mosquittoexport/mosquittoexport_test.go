package mosquittoexport

import (
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker"
)

func TestHashVerify(t *testing.T) {
	h, err := Hash("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(h, "$")
	if len(parts) != 5 || parts[1] != "7" || parts[2] != "101" || len(parts[3]) != 16 || len(parts[4]) != 88 {
		t.Fatalf("hash %q: want $7$101$<16 b64>$<88 b64>", h)
	}
	if !Verify(h, "s3cret") || Verify(h, "s3creT") || Verify("$6$x$y", "s3cret") {
		t.Fatal("Verify disagrees with Hash")
	}
	if h2, _ := Hash("s3cret"); h2 == h {
		t.Fatal("two hashes share a salt")
	}
}

// A hash made by mosquitto_passwd 2.0.11 for "secret2" verifies.
func TestVerifyMosquittoPasswd(t *testing.T) {
	const h = "$7$101$L0P/f4UAlxL5zvsM$tUJZ8WvCTnzoxGD0LnMrrACWUcBDRpP7TLwaTEvcSTj1VhlOf4OT1VghJnkOGukts0k66sz3FpsZyUFIXBuwCg=="
	if !Verify(h, "secret2") || Verify(h, "secret1") {
		t.Fatal("mosquitto_passwd hash not verified")
	}
}

func TestRender(t *testing.T) {
	accts := []broker.Account{
		broker.DeviceAccount("pi-2", "sha256:b", nil, 1),
		broker.DeviceAccount("pi-1", "sha256:a", nil, 1),
		broker.DeviceAccount("pi-3", "sha256:c", nil, 1),
		broker.IntegrationAccount("ha", "sha256:d"),
	}
	hashes := map[string]string{"pi-1": "$7$101$A$B", "pi-2": "$7$101$C$D", "integration:ha": "$7$101$E$F"}
	f, err := Render(accts, hashes, Superuser{Username: "controller", Hash: "$7$101$X$Y"})
	if err != nil {
		t.Fatal(err)
	}
	wantPW := "controller:$7$101$X$Y\npi-1:$7$101$A$B\npi-2:$7$101$C$D\n"
	if string(f.PasswordFile) != wantPW {
		t.Fatalf("password file:\n%s\nwant:\n%s", f.PasswordFile, wantPW)
	}
	acl := string(f.ACLFile)
	for _, want := range []string{
		"user controller\ntopic readwrite #\n",
		"user pi-1\ntopic read chorus/v1/pi-1/#\ntopic write chorus/v1/pi-1/availability\n",
		"topic write chorus/v1/pi-1/bus/+\n",
	} {
		if !strings.Contains(acl, want) {
			t.Errorf("acl lacks %q:\n%s", want, acl)
		}
	}
	for _, bad := range []string{"pi-3", "integration:ha", "desired"} {
		if strings.Contains(acl, "user "+bad) || strings.Contains(acl, "write chorus/v1/pi-1/"+bad) {
			t.Errorf("acl has %q:\n%s", bad, acl)
		}
	}
	if len(f.Skipped) != 2 || !strings.HasPrefix(f.Skipped[0], "integration:ha:") || !strings.HasPrefix(f.Skipped[1], "pi-3:") {
		t.Fatalf("skipped = %q", f.Skipped)
	}
	if _, err := Render(nil, nil, Superuser{Username: "a:b", Hash: "$7$1$a$b"}); err == nil {
		t.Fatal("superuser with ':' accepted")
	}
}
