//go:build !chorus_agent

package main

// netLab runs chorus processes on a network of their own: one network
// namespace per machine, each joined by a veth pair to a bridge in a hub
// namespace, with addresses from the benchmarking range 198.18.0.0/15. No
// traffic leaves the host. Used by the network E2E tests
// (e2e_network_test.go); a test adds machines with node and runs chorus in
// them with startIn and runIn.

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// netLab is one test's network.
type netLab struct {
	t     *testing.T
	id    string // random, in every name, so tests at once never share one
	hub   string // the namespace of the bridge
	nodes int
}

// labNode is one machine: its namespace and address.
type labNode struct {
	lab  *netLab
	ns   string
	addr string // 198.18.0.N
}

// newNetLab creates the hub namespace and its bridge; the test's cleanup
// deletes every namespace it made (and so their interfaces). It skips the
// test when namespaces cannot be made here: not root, or no `ip`.
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root; run the network E2E tests as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need the `ip` command (iproute2)")
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	l := &netLab{t: t, id: hex.EncodeToString(b)}
	l.hub = "chorus-" + l.id + "-hub"
	l.ip("netns", "add", l.hub)
	t.Cleanup(func() { l.del(l.hub) })
	l.ipIn(l.hub, "link", "set", "lo", "up")
	l.ipIn(l.hub, "link", "add", "br0", "type", "bridge")
	l.ipIn(l.hub, "link", "set", "br0", "up")
	return l
}

// node adds a machine named name with the next address (198.18.0.1, .2, …),
// its loopback up and its eth0 on the hub's bridge.
func (l *netLab) node(name string) *labNode {
	l.t.Helper()
	l.nodes++
	n := &labNode{lab: l, ns: "chorus-" + l.id + "-" + name, addr: "198.18.0." + strconv.Itoa(l.nodes)}
	l.ip("netns", "add", n.ns)
	l.t.Cleanup(func() { l.del(n.ns) })
	hubEnd := "v" + l.id + strconv.Itoa(l.nodes) // ≤ 15 bytes
	l.ip("link", "add", hubEnd, "netns", l.hub, "type", "veth", "peer", "name", "eth0", "netns", n.ns)
	l.ipIn(l.hub, "link", "set", hubEnd, "master", "br0")
	l.ipIn(l.hub, "link", "set", hubEnd, "up")
	l.ipIn(n.ns, "link", "set", "lo", "up")
	l.ipIn(n.ns, "addr", "add", n.addr+"/24", "dev", "eth0")
	l.ipIn(n.ns, "link", "set", "eth0", "up")
	return n
}

func (l *netLab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (l *netLab) ipIn(ns string, args ...string) { l.ip(append([]string{"-n", ns}, args...)...) }

func (l *netLab) del(ns string) {
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		l.t.Logf("ip netns del %s: %v\n%s", ns, err, out)
	}
}

// command is chorus with args run inside the node's namespace.
func (n *labNode) command(args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns, chorusBin}, args...)...)
}

// startIn starts a long-running chorus command in the node (startProc:
// output collected, killed at the test's end). `ip netns exec` execs chorus
// itself, so the process is chorus.
func (n *labNode) startIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	return startProc(t, dir, n.command(args...))
}

// runIn runs a chorus command in the node and returns its output.
func (n *labNode) runIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := n.command(args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustIn is runIn that fails the test on error.
func (n *labNode) mustIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := n.runIn(t, dir, args...)
	if err != nil {
		t.Fatalf("chorus %s in %s: %v\n%s", strings.Join(args, " "), n.ns, err, out)
	}
	return out
}
