//go:build !chorus_agent

package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // integrity check of the gateway's files

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
)

// startUnderPrlimit starts chorus with its file size limit (RLIMIT_FSIZE)
// set to fsize bytes, as `prlimit --fsize` does for a service.
func startUnderPrlimit(t *testing.T, dir string, fsize int64, args ...string) *proc {
	t.Helper()
	full := append([]string{"--fsize=" + strconv.FormatInt(fsize, 10), chorusBin}, args...)
	return startProc(t, dir, exec.Command("prlimit", full...))
}

// largestFile is the size of the biggest file directly in dir.
func largestFile(t *testing.T, dir string) int64 {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range es {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n = max(n, fi.Size())
		}
	}
	return n
}

// removeUp removes up.json so waitUp waits for the next gateway's.
func removeUp(t *testing.T, dataDir string) {
	t.Helper()
	if err := os.Remove(configs.UpPath(dataDir)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// integrityCheck runs SQLite's integrity check on a database file.
func integrityCheck(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&got); err != nil {
		return err.Error()
	}
	return got
}

// TestDiskFullE2E runs the real gateway with a file size limit (prlimit
// --fsize) so its database files hit the limit as on a full disk. The
// promise: the gateway is not killed (Go ignores SIGXFSZ, so the write fails
// with EFBIG), the refused request fails visibly for the operator and the
// gateway logs which database could not be written; nothing is silently
// lost or corrupted: restarted without the limit, both database files pass
// integrity_check and every device whose add succeeded is there, the ones
// stored before the limit included.
//
// The gateway is restarted on the ports its first run was given, which are
// its own (startFaultFleet), so the test runs beside others.
func TestDiskFullE2E(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("prlimit missing (util-linux): the disk-full end-to-end test needs it")
		}
		t.Fatal("prlimit missing in CI")
	}
	f := startFaultFleet(t, "hall", "pi-1", "pi-2", "pi-3")
	if err := f.gw.stop(t, 20*time.Second); err != nil {
		t.Fatalf("gateway stop: %v", err)
	}
	// Room for the files as they are and a few transactions more.
	limit := largestFile(t, f.gwData) + 128<<10
	removeUp(t, f.gwData)
	f.gw = startUnderPrlimit(t, f.work, limit, "gateway", "--data-dir", f.gwData,
		"--mqtt-listen", mqttAddr(t, f.up.MQTTURL), "--http-listen", strings.TrimPrefix(f.up.HTTPURL, "http://"))
	waitUp(t, f.gw, f.gwData)

	added := []string{"pi-1", "pi-2", "pi-3"}
	var refusal, refused string
	for i := range 500 {
		d := fmt.Sprintf("fill-%03d", i)
		out, err := f.runFleet("device", "add", d, "--tag", "hall", "--credentials-out", f.creds(d))
		if err != nil {
			refusal, refused = out, d
			break
		}
		added = append(added, d)
	}
	if refusal == "" {
		t.Fatalf("500 devices added under a file size limit of %d bytes", limit)
	}
	if f.gw.exited() {
		t.Fatalf("the gateway died at the file size limit:\n%s", f.gw.out.String())
	}
	t.Logf("refused after %d devices: %s", len(added), strings.TrimSpace(refusal))
	// A write refused before COMMIT changed nothing; an I/O error at COMMIT
	// leaves the outcome unknown, and the message must say which.
	if !strings.Contains(refusal, "fleet database") ||
		!strings.Contains(refusal, "nothing changed") && !strings.Contains(refusal, "may or may not have been applied") {
		t.Fatalf("the CLI's refusal does not say the gateway's database could not take the change:\n%s", refusal)
	}
	logs := f.gw.out.String()
	if !strings.Contains(logs, "fleet db") || !(strings.Contains(logs, "disk I/O error") || strings.Contains(logs, "full")) {
		t.Fatalf("the gateway's log does not name the fleet db and the write error:\n%s", logs)
	}
	if err := f.gw.stop(t, 20*time.Second); err != nil {
		t.Logf("gateway stop at the limit: %v", err) // a failed final checkpoint may end it non-zero
	}

	for _, name := range []string{"fleet.db", "broker.db"} {
		if got := integrityCheck(t, filepath.Join(f.gwData, name)); got != "ok" {
			t.Fatalf("%s integrity_check after the limit: %s", name, got)
		}
	}
	removeUp(t, f.gwData)
	f.gw = startChorus(t, f.work, "gateway", "--data-dir", f.gwData,
		"--mqtt-listen", mqttAddr(t, f.up.MQTTURL), "--http-listen", strings.TrimPrefix(f.up.HTTPURL, "http://"))
	waitUp(t, f.gw, f.gwData)
	out := f.mustFleet("device", "list")
	for _, d := range added {
		if !strings.Contains(out, d) {
			t.Fatalf("device %s, added before the limit was hit, is missing after the restart:\n%s", d, out)
		}
	}
	// "Nothing changed" is said only when nothing was stored: the refused
	// device is not there (else its one-time secret was lost).
	if strings.Contains(refusal, "nothing changed") && strings.Contains(out, refused+" ") {
		t.Fatalf("device %s was refused with \"nothing changed\" but is in the registry:\n%s", refused, out)
	}
	// An add the gateway could not confirm kept the credentials: if the
	// device was stored, they are its working credentials (the one-time
	// secret is not lost).
	if strings.Contains(refusal, "may or may not") {
		creds, err := configs.ReadAgentCredentials(f.creds(refused))
		if err != nil {
			t.Fatalf("unconfirmed add of %s: its credentials were not kept: %v\n%s", refused, err, refusal)
		}
		if strings.Contains(out, refused+" ") {
			c, err := brokertest.Connect(t, mqttAddr(t, f.up.MQTTURL), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: refused})
			if err != nil {
				t.Fatalf("device %s was stored, but the credentials kept for it do not log in: %v", refused, err)
			}
			c.Close()
		}
		t.Logf("unconfirmed add of %s: stored %v, credentials kept", refused, strings.Contains(out, refused+" "))
	}
	if got := integrityCheck(t, filepath.Join(f.gwData, "fleet.db")); got != "ok" {
		t.Fatalf("fleet.db integrity_check after the restart: %s", got)
	}
}
