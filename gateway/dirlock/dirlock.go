// Package dirlock makes a data directory belong to one process at a time
// (issue 16, point 5): `chorus gateway`, `chorus up` and `chorus agent` take
// its lock before they touch anything in the directory, and a second process
// on the same directory fails at once with a message that names the holder.
//
// The lock is flock(2) on the file "chorus.lock" in the directory. The kernel
// drops it when the holder exits, however it exits (kill -9 included), so a
// stale lock file never blocks a start. The file holds the holder's pid and
// command for the message only; the lock, not the content, decides.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileName is the lock file inside a locked directory.
const FileName = "chorus.lock"

// Lock is a held directory lock.
type Lock struct {
	f *os.File
}

// HeldError says that another process holds the directory.
type HeldError struct {
	Dir  string
	PID  int    // 0 when the holder wrote no pid (yet)
	What string // the holder's command, as it wrote it
}

func (e *HeldError) Error() string {
	who := "another chorus process"
	if e.PID > 0 {
		who = fmt.Sprintf("pid %d", e.PID)
		if e.What != "" {
			who += " (" + e.What + ")"
		}
	}
	stop := "stop it first"
	if e.PID > 0 {
		stop = fmt.Sprintf("stop it first (Ctrl-C in its terminal, `kill %d`, or its systemd unit)", e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by %s: one process per data dir; %s, or give this one another --data-dir", e.Dir, who, stop)
}

// Acquire creates dir (0700) if needed and locks it for this process, writing
// what (e.g. "chorus gateway") and the pid into the lock file. It never
// waits: a directory another process holds is a *HeldError.
func Acquire(dir, what string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, holder(dir, path)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := record(f, what); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// record writes "pid what" into the held lock file.
func record(f *os.File, what string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+what+"\n"), 0)
	return err
}

// holder reads who holds the lock, for the message.
func holder(dir, path string) error {
	e := &HeldError{Dir: dir}
	b, err := os.ReadFile(path)
	if err != nil {
		return e
	}
	pid, what, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if n, err := strconv.Atoi(pid); err == nil && n > 0 {
		e.PID, e.What = n, what
	}
	return e
}

// Release unlocks the directory. The file stays (removing it could unlink a
// file another process has just locked). Idempotent.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}
