package sqlite

import (
	"fmt"
	"strings"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/chorus-edge/chorus/fleet"
)

// resultCode stands in for the driver's error, whose fields are private: a
// COMMIT that fails with an I/O error cannot be provoked reliably here.
type resultCode int

func (c resultCode) Error() string { return fmt.Sprintf("sqlite result code %d", int(c)) }
func (c resultCode) Code() int     { return int(c) }

// TestStorageErrorMessages: a storage failure is "unavailable" with a message
// that is true of what happened: a statement or a busy/full commit changed
// nothing; an I/O error at COMMIT may have applied the change, and the
// message says so. The original error stays in the chain for the log, and
// an error that is already an application error is left alone.
func TestStorageErrorMessages(t *testing.T) {
	t.Parallel()
	wrap := func(step string, code int) error { return fmt.Errorf("fleet db f.db: %s: %w", step, resultCode(code)) }
	cases := []struct {
		name string
		err  error
		want string // in the operator's message; "" = passed through unchanged
	}{
		{"busy statement", unavailableOr(wrap("begin write", sqlite3.SQLITE_BUSY)), "busy"},
		{"full statement", unavailableOr(wrap("write", sqlite3.SQLITE_FULL)), "nothing changed"},
		{"I/O statement", unavailableOr(wrap("write", sqlite3.SQLITE_IOERR_WRITE)), "nothing changed"},
		{"I/O at commit", commitFailed(wrap("commit write", sqlite3.SQLITE_IOERR_FSYNC)), "may or may not have been applied"},
		{"full at commit", commitFailed(wrap("commit write", sqlite3.SQLITE_FULL)), "nothing changed"},
		{"I/O at commit, then run's own mapping", unavailableOr(commitFailed(wrap("commit write", sqlite3.SQLITE_IOERR))), "may or may not have been applied"},
		{"constraint", unavailableOr(wrap("write", sqlite3.SQLITE_CONSTRAINT)), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := fleet.ErrorCode(tc.err), fleet.ErrorMessage(tc.err)
			if tc.want == "" {
				if code != fleet.EINTERNAL {
					t.Fatalf("code %q, want internal (passed through)", code)
				}
				return
			}
			if code != fleet.EUNAVAILABLE || !strings.Contains(msg, tc.want) {
				t.Fatalf("code %q, message %q: want unavailable saying %q", code, msg, tc.want)
			}
			if !strings.Contains(tc.err.Error(), "fleet db f.db") {
				t.Fatalf("the original error left the chain: %v", tc.err)
			}
		})
	}
}
