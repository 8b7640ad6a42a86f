package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// drainTimeout bounds how long output is read after the group was killed: a
// descendant that left the group (setsid) may still hold the pipes open.
const drainTimeout = 2 * time.Second

// Process is one running skill. Its methods are safe for concurrent use.
type Process struct {
	skill string
	pid   int
	grace time.Duration
	log   *slog.Logger
	tail  *ring
	recs  *records // nil when the launcher records nothing
	done  chan struct{}

	// mu guards exited. The group is signalled only under mu while exited
	// is false: the main process is then alive or an unreaped zombie, so
	// its pid, which is the group id, cannot have been recycled.
	mu     sync.Mutex
	exited bool

	exitErr error // written once before done is closed
}

// start runs cmd for skill and starts the goroutines that own its output and
// its exit; the running process is recorded in recs.
func start(skill string, cmd *exec.Cmd, cfg Config, recs *records) (*Process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	closeAll(outW, errW) // the child holds its own copies
	if err != nil {
		closeAll(outR, errR)
		return nil, err
	}
	p := &Process{
		skill: skill,
		pid:   cmd.Process.Pid,
		grace: cfg.StopGrace,
		log:   cfg.Logger.With("skill_id", skill),
		tail:  newRing(cfg.TailLines),
		recs:  recs,
		done:  make(chan struct{}),
	}
	p.log.Info("skill process started", "pid", p.pid, "exec", cmd.Args[len(cmd.Args)-1])
	if err := recs.add(skill, p.pid); err != nil {
		p.log.Warn("skill process not recorded; an agent crash could leave what it starts running", "err", err)
	}
	var readers sync.WaitGroup
	for _, o := range []struct {
		f    *os.File
		name string
	}{{outR, "stdout"}, {errR, "stderr"}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			p.readLines(o.f, o.name)
		}()
	}
	go p.wait(cmd, &readers, outR, errR)
	return p, nil
}

// wait owns the child's exit: it waits for the main process to exit without
// reaping it, kills what is left of the group, reaps, drains the output and
// closes done last.
func (p *Process) wait(cmd *exec.Cmd, readers *sync.WaitGroup, pipes ...*os.File) {
	defer close(p.done)
	if err := waitExitedNoReap(p.pid); err != nil {
		p.log.Warn("wait for skill process without reaping", "err", err)
	} else {
		p.markExited(true)
	}
	p.exitErr = exitError(p.skill, cmd.Wait())
	p.markExited(false)
	if err := p.recs.remove(p.pid); err != nil {
		p.log.Warn("skill process record not removed", "err", err)
	}
	drain(readers, drainTimeout, pipes...)
	p.log.Info("skill process exited", "pid", p.pid, "status", describe(p.exitErr))
}

// markExited stops further signals to the group. With killRest (the main
// process is an unreaped zombie) it first sends SIGKILL to the rest of the
// group, so nothing the skill started outlives it.
func (p *Process) markExited(killRest bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if killRest && !p.exited {
		if err := killGroup(p.pid, syscall.SIGKILL); err != nil {
			p.log.Warn("kill the rest of the skill's process group", "err", err)
		}
	}
	p.exited = true
}

// waitExitedNoReap blocks until pid has exited, leaving it a zombie.
//
// It waits on a pidfd (Linux 5.10+: pidfd_open with PIDFD_NONBLOCK) through
// the runtime's poller, so a running skill costs the agent a parked
// goroutine rather than an OS thread blocked in waitid: twenty skills were
// twenty idle threads (docs/benchmarks.md, agent idle RSS). On a kernel
// without pidfds it blocks a thread in waitid as before.
func waitExitedNoReap(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitidNoReap(unix.P_PID, pid, 0)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitidNoReap(unix.P_PID, pid, 0)
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		werr = waitidNoReap(unix.P_PIDFD, int(fd), unix.WNOHANG)
		// errNotYet: not exited; park until the pidfd is readable, which
		// it becomes when the process exits.
		return !errors.Is(werr, errNotYet)
	})
	if err != nil { // the pidfd could not be polled: wait as without one
		return waitidNoReap(unix.P_PID, pid, 0)
	}
	return werr
}

// errNotYet is waitidNoReap's answer under WNOHANG while the process runs.
var errNotYet = errors.New("not exited yet")

// waitidNoReap runs waitid(idtype, id, WEXITED|WNOWAIT|extra), retrying
// EINTR. Under WNOHANG it returns errNotYet when nothing has exited: the
// kernel then reports no signal in the zeroed siginfo (waitid(2)).
func waitidNoReap(idtype, id, extra int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(idtype, id, &info, unix.WEXITED|unix.WNOWAIT|extra, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case extra&unix.WNOHANG != 0 && info.Signo == 0:
			return errNotYet
		}
		return nil
	}
}

// killGroup signals the process group pgid; a group that is already gone is
// not an error.
func killGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// drain waits for the readers to reach end of output, at most d, then closes
// the pipes (which ends any read still blocked) and waits for the readers.
func drain(readers *sync.WaitGroup, d time.Duration, pipes ...*os.File) {
	finished := make(chan struct{})
	go func() {
		readers.Wait()
		close(finished)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
	}
	closeAll(pipes...)
	<-finished
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// PID is the skill's process id, which is also its process group id.
func (p *Process) PID() int { return p.pid }

// Done is closed once the skill has exited, its group has been killed and
// its output has been read to the end.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr says how the skill exited: nil for status 0, else an *ExitError
// (exit status or signal). It is valid once Done is closed and nil before.
func (p *Process) ExitErr() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Tail returns the last output lines (stdout and stderr interleaved in the
// order they were read), oldest first. SKILL_MANAGER §2: kept for the error
// report.
func (p *Process) Tail() []string { return p.tail.lines() }

// Stop ends the skill: SIGTERM to its process group, then SIGKILL when it has
// not exited after the grace period or when ctx ends first. It returns once
// the process has exited (see Done). Stop is idempotent and returns nil for
// a skill that already exited; the error is only for a group that cannot be
// signalled, and then Stop does not wait. SKILL_MANAGER §2, §9.
func (p *Process) Stop(ctx context.Context) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop skill %s: %w", p.skill, err)
	}
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.log.Warn("skill did not stop after SIGTERM; killing it", "pid", p.pid, "grace", p.grace)
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop skill %s: %w", p.skill, err)
	}
	<-p.done // SIGKILL cannot be ignored; drain is bounded by drainTimeout
	return nil
}

// signal sends sig to the group unless the main process has exited.
func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return nil
	}
	if err := killGroup(p.pid, sig); err != nil {
		return fmt.Errorf("send %s to process group %d: %w", unix.SignalName(sig), p.pid, err)
	}
	return nil
}
