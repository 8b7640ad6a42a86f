package process

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitError describes a skill process that did not exit with status 0.
type ExitError struct {
	Skill  string
	Code   int            // the exit status; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it; 0 when it exited
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("skill %s was killed by signal %s", e.Skill, signalName(e.Signal))
	}
	return fmt.Sprintf("skill %s exited with status %d", e.Skill, e.Code)
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("%d", int(sig))
}

// exitError turns the result of exec.Cmd.Wait into ExitErr's value.
func exitError(skill string, err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("wait for skill %s: %w", skill, err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return &ExitError{Skill: skill, Code: -1, Signal: ws.Signal()}
	}
	return &ExitError{Skill: skill, Code: ee.ExitCode()}
}

// describe is the status for the log.
func describe(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
