package external

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// exportEnv is a real store holding pi-1, which reports hello.chorus, and
// an exporter whose accounts are pi-1's (with a grant for hello.chorus),
// the local observer's and an operator's.
func exportEnv(t *testing.T) (*Exporter, *sqlite.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateDevice(ctx, &fleet.Device{ID: "pi-1", SecretHash: broker.HashSecret("dev"), SkillKey: pub, KeyVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateReported(ctx, "pi-1", json.RawMessage(`{"skills":[{"id":"hello.chorus","state":"loaded"}]}`), 0); err != nil {
		t.Fatal(err)
	}
	dev := broker.DeviceAccount("pi-1", broker.HashSecret("dev"), pub, 1)
	dev.SkillGrants = map[string][]string{"hello.chorus": {"ovos.skills.install"}}
	accts := []broker.Account{dev, broker.IntegrationAccount("observer", broker.HashSecret("obs")),
		broker.OperatorAccount("alice", broker.HashSecret("op"))}
	e := NewExporter(ExporterConfig{Store: db, Local: []configs.Credential{{Username: "integration:observer", Password: "obs"}},
		Accounts: func(context.Context) ([]broker.Account, error) { return accts, nil }})
	return e, db
}

// The dynamic-security clients carry a skill's grants: its account is
// derived from its device's, as the broker derives it (exportAccounts, the
// copy of the controller's account list this replaced, dropped them).
func TestDynSecClientsKeepSkillGrants(t *testing.T) {
	e, _ := exportEnv(t)
	clients, err := e.DynSecClients(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := mosquittoexport.AccountACLs(broker.SkillAccount("pi-1", "hello.chorus", "ovos.skills.install"))
	ungranted := mosquittoexport.AccountACLs(broker.SkillAccount("pi-1", "hello.chorus"))
	if reflect.DeepEqual(want, ungranted) {
		t.Fatal("the grant changes no ACL: the test proves nothing")
	}
	got := map[string]bool{}
	for _, c := range clients {
		got[c.Username] = true
		if c.Username == "skill:pi-1:hello.chorus" && !reflect.DeepEqual(c.ACLs, want) {
			t.Errorf("skill ACLs = %+v, want the granted account's %+v", c.ACLs, want)
		}
		if c.Username == "integration:observer" && c.Password != "obs" {
			t.Errorf("the local observer's password = %q, want its credential's", c.Password)
		}
	}
	for _, u := range []string{"pi-1", "integration:observer", "operator:alice", "skill:pi-1:hello.chorus"} {
		if !got[u] {
			t.Errorf("no client %s in %v", u, got)
		}
	}
}

// SecretIssued records the hash the password file needs; an account
// without one is skipped, with the reason.
func TestExportRecordsIssuedSecrets(t *testing.T) {
	e, _ := exportEnv(t)
	ctx := context.Background()
	pw, _, skipped, err := e.ExportMosquitto(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hasUser(pw, "pi-1") || len(skipped) == 0 {
		t.Fatalf("before any secret was issued: password file %q, skipped %v", pw, skipped)
	}
	e.SecretIssued(ctx, "pi-1", "dev")
	if pw, _, _, err = e.ExportMosquitto(ctx); err != nil || !hasUser(pw, "pi-1") {
		t.Fatalf("after SecretIssued: %q (%v)", pw, err)
	}
	if h := passwordLine(pw, "pi-1"); !mosquittoexport.Verify(h, "dev") {
		t.Errorf("pi-1's hash %q does not verify its secret", h)
	}
	e.SecretIssued(ctx, "pi-1", "a newer secret the device does not hold")
	if pw, _, _, _ = e.ExportMosquitto(ctx); hasUser(pw, "pi-1") {
		t.Error("a hash recorded for another secret than the account's is exported")
	}
}

func hasUser(file []byte, user string) bool { return passwordLine(file, user) != "" }

func passwordLine(file []byte, user string) string {
	for _, l := range strings.Split(string(file), "\n") {
		if u, h, ok := strings.Cut(l, ":"); ok && u == user {
			return h
		}
	}
	return ""
}
