package localauth

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadOrCreateIsStable(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreate(dir, "pi-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir, "pi-1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Operator != b.Operator || a.Observer != b.Observer || *a.Device != *b.Device {
		t.Fatal("credentials changed across loads")
	}
	st, _ := os.Stat(filepath.Join(dir, FileName))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	accts, err := a.Accounts()
	if err != nil || len(accts) != 3 {
		t.Fatalf("accounts: %v %d", err, len(accts))
	}
	if _, err := LoadOrCreate(dir, "gateway"); err == nil {
		t.Fatal("reserved device id accepted")
	}
}

func TestOperatorToken(t *testing.T) {
	dir := t.TempDir()
	a, err := OperatorToken(dir)
	if err != nil || len(a) < 40 {
		t.Fatalf("token %q: %v", a, err)
	}
	b, _ := OperatorToken(dir)
	if a != b {
		t.Fatal("token changed")
	}
	st, _ := os.Stat(filepath.Join(dir, TokenFile))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}
