package process

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// TrampolineCommand is the hidden chorus subcommand that runs ExecMain.
const TrampolineCommand = "skill-exec"

// noChange is the uid/gid argument that keeps the agent's own.
const noChange = "-"

// trampolineArgs are ExecMain's arguments after the command: uid, gid (or
// "-"), the agent's pid, and the exec target relative to the working
// directory.
func trampolineArgs(id *Identity, agentPID int, exec string) []string {
	uid, gid := noChange, noChange
	if id != nil {
		uid, gid = strconv.FormatUint(uint64(id.UID), 10), strconv.FormatUint(uint64(id.GID), 10)
	}
	return []string{uid, gid, strconv.Itoa(agentPID), exec}
}

// ExecMain is the skill launcher that the agent runs as `chorus skill-exec
// UID GID AGENT_PID EXEC [ARG...]` in the skill's directory, with the skill's
// environment. It returns only on failure; on success the skill replaces it
// (same pid, same process group). In order, on one OS thread (credentials,
// no_new_privs and capabilities are per thread, and execve takes the calling
// thread's):
//  1. drop every supplementary group, then the gid, then the uid (setresgid,
//     setresuid: real, effective and saved), unless "-";
//  2. set no_new_privs, so no set-uid binary or file capability can raise
//     the skill again;
//  3. clear the permitted, effective and inheritable capability sets and
//     the ambient set: an agent that is not root but holds ambient
//     capabilities (systemd AmbientCapabilities=) would otherwise pass them
//     through execve, and a setuid between two non-root uids keeps them;
//  4. set the parent-death signal to SIGKILL (a change of credentials
//     clears the one the agent set at fork), then check the agent is still
//     its parent, so a skill never outlives an agent that died meanwhile;
//  5. execve EXEC with ARGs (an OVOS launcher's skill id), EXEC a path
//     relative to the directory the agent chose (only that directory has
//     to be searchable by the skill's uid) or the launcher's absolute path.
func ExecMain(args []string) error {
	runtime.LockOSThread() // never unlocked: this thread execs or the process exits
	if len(args) < 4 {
		return fmt.Errorf("%s: want UID GID AGENT_PID EXEC [ARG...], got %d arguments", TrampolineCommand, len(args))
	}
	agent, err := strconv.Atoi(args[2])
	if err != nil {
		return fmt.Errorf("%s: agent pid %q: %w", TrampolineCommand, args[2], err)
	}
	if err := dropIdentity(args[0], args[1]); err != nil {
		return fmt.Errorf("%s: %w", TrampolineCommand, err)
	}
	if err := dropPrivileges(); err != nil {
		return fmt.Errorf("%s: %w", TrampolineCommand, err)
	}
	if err := dieWithAgent(agent); err != nil {
		return fmt.Errorf("%s: %w", TrampolineCommand, err)
	}
	exec := args[3]
	if err := syscall.Exec(exec, args[3:], os.Environ()); err != nil {
		return fmt.Errorf("%s: exec %s: %w", TrampolineCommand, exec, err)
	}
	return nil
}

func dropIdentity(uidArg, gidArg string) error {
	if uidArg == noChange && gidArg == noChange {
		return nil
	}
	uid, err1 := strconv.ParseUint(uidArg, 10, 32)
	gid, err2 := strconv.ParseUint(gidArg, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("uid %q gid %q: %w", uidArg, gidArg, err)
	}
	// Go's syscall setters apply to every thread of the process.
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("drop supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(int(gid), int(gid), int(gid)); err != nil {
		return fmt.Errorf("set gid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(int(uid), int(uid), int(uid)); err != nil {
		return fmt.Errorf("set uid %d: %w", uid, err)
	}
	return nil
}

func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 takes two 32-bit halves; all zero
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no ambient set (Linux < 4.3)
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return nil
}

func dieWithAgent(agent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("set parent-death signal: %w", err)
	}
	if ppid := os.Getppid(); ppid != agent {
		return fmt.Errorf("the agent (pid %d) is gone (parent is now %d); not starting the skill", agent, ppid)
	}
	return nil
}
