package skilluser

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// rangeLock is the host-wide claim on a uid range: a bound abstract unix
// socket, which the kernel releases when the process dies, so a crashed
// agent never leaves a stale claim behind (no file, no cleanup). Abstract
// names live in the network namespace, which is the host's for the agent.
type rangeLock struct {
	once sync.Once
	fd   int
}

func lockName(r Range) string { return "\x00chorus/skill-uids/" + r.String() }

// claimRange binds the range's name; a second agent with the same range is
// refused with the fix.
func claimRange(r Range) (*rangeLock, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("claim uid range %s: %w", r, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: lockName(r)}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("uid range %s is in use by another chorus agent on this host; give each agent its own skills.uid_range", r)
		}
		return nil, fmt.Errorf("claim uid range %s: %w", r, err)
	}
	return &rangeLock{fd: fd}, nil
}

func (l *rangeLock) release() error {
	var err error
	l.once.Do(func() { err = unix.Close(l.fd) })
	return err
}
