//go:build !chorus_agent

package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
)

// A partition: the agent reaches the gateway's broker only through a
// loopback TCP proxy the test controls, and so do its skills (their
// CHORUS_MQTT_URL is the agent's mqtt_url). The proxy is cut, sockets left
// open and bytes dropped, for longer than the keepalive (agent.keepalive,
// 5 s here; 30 s by default), then restored.
//
// Promise: during the partition the device's skill processes keep running,
// and the device shows offline (its Will, once the broker has noticed the
// dead connection) in the controller's view and on the retained
// availability topic; after the partition the device is online again with
// its skills loaded, and nothing desired or reported was lost.
func TestFaultsPartitionConverges(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := startFaultFleet(t, "hall", "pi-1")
	f.agentConfig = filepath.Join(f.work, "agent.json")
	writeFile(t, f.agentConfig, `{"agent": {"keepalive": 5, "will_delay": 1}}`)
	px := newTCPProxy(t, mqttAddr(t, f.up.MQTTURL))
	setCredsMQTTURL(t, f.creds("pi-1"), "mqtt://"+px.addr())
	agent := f.startAgent("pi-1")
	f.waitOnline("pi-1")
	f.publish("fleet.partition", nil)
	f.mustFleet("install", "fleet.partition", "--device", "pi-1", "--timeout", "60s", "--wait", "--poll-interval", "200ms")
	f.waitLoaded("fleet.partition", "pi-1")
	skillPIDs := childPIDs(t, agent.cmd.Process.Pid)
	if len(skillPIDs) == 0 {
		t.Fatal("the agent runs no skill process")
	}
	obs := f.observer("partition", "chorus/v1/pi-1/#")
	before := f.retained(t, "pi-1")
	if before["desired"] == "" || before["skills"] == "" {
		t.Fatalf("retained state before the partition: %v", before)
	}

	cut := time.Now()
	px.cut()
	// The broker notices after 1.5 × keepalive (7.5 s), then the Will's 1 s delay.
	f.waitDevice("pi-1", "offline", func(d api.Device) bool { return !d.Online })
	t.Logf("offline %s after the cut", time.Since(cut).Round(time.Second))
	if got := f.retained(t, "pi-1"); got["availability"] != "offline" {
		t.Fatalf("retained availability during the partition: %v", got)
	}
	for _, pid := range skillPIDs {
		if !alive(pid) {
			t.Fatalf("skill process %d died during the partition (agent %s)", pid, agent.out.String())
		}
	}
	if agent.exited() {
		t.Fatal("the agent exited during the partition")
	}

	// Only what is published after the restore proves convergence.
	for {
		if _, ok := obs.Next(50 * time.Millisecond); !ok {
			break
		}
	}
	px.restore()
	f.waitDevice("pi-1", "online again", func(d api.Device) bool { return d.Online })
	waitAllSkills(t, obs, []string{"pi-1"}, func(s map[string]string) bool { return s["fleet.partition"] == "loaded" })
	after := f.retained(t, "pi-1")
	if after["availability"] != "online" {
		t.Fatalf("retained availability after the partition: %v", after)
	}
	if after["desired"] != before["desired"] {
		t.Fatalf("desired changed across the partition:\nbefore %s\nafter  %s", before["desired"], after["desired"])
	}
	var was, now skillsTopic
	if json.Unmarshal([]byte(before["skills"]), &was) != nil || json.Unmarshal([]byte(after["skills"]), &now) != nil || len(now.Skills) != len(was.Skills) {
		t.Fatalf("skills before the partition %s, after %s", before["skills"], after["skills"])
	}
	t.Logf("the partition test took %s", time.Since(start).Round(time.Second))
}

func setCredsMQTTURL(t *testing.T, path, mqttURL string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c configs.AgentCredentials
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c.MQTTURL = mqttURL
	if b, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// childPIDs lists the direct children of pid (Linux /proc).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	var pids []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				pids = append(pids, n)
			}
		}
	}
	if len(tasks) == 0 {
		t.Fatalf("no /proc/%d/task/*/children", pid)
	}
	return pids
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}

// tcpProxy forwards loopback TCP connections to upstream. cut stops the
// forwarding without closing anything: bytes either way are dropped and new
// connections are accepted and left hanging, as a partition looks to both
// ends. restore closes every connection the partition touched and forwards
// again.
type tcpProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	isCut  bool
	conns  map[net.Conn]bool // both ends of every connection
	closed bool
}

func newTCPProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.closeAll()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *tcpProxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isCut
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		if p.cutNow() {
			go io.Copy(io.Discard, c) // hangs until restore closes it
			continue
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(up) {
			c.Close()
			up.Close()
			return
		}
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies src to dst, dropping what it reads while the proxy is cut.
func (p *tcpProxy) pipe(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cutNow() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	p.isCut = true
	p.mu.Unlock()
}

// restore ends the partition: the connections that lived through it have
// lost bytes and are closed; new ones are forwarded.
func (p *tcpProxy) restore() {
	p.mu.Lock()
	cs := p.conns
	p.conns = map[net.Conn]bool{}
	p.isCut = false
	p.mu.Unlock()
	for c := range cs {
		c.Close()
	}
}

func (p *tcpProxy) closeAll() {
	p.mu.Lock()
	cs := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range cs {
		c.Close()
	}
}
