package fleetbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// The simulated fleet can run in its own process (`chorus bench
// fleet-devices`, started by `chorus bench fleet`), so the gateway's CPU time
// and peak RSS are the gateway's alone, and the two sides' sockets are
// counted against two open-file limits. Parent and child speak JSON lines:
// the parent writes a Spec then commands on the child's stdin, the child
// answers with events on its stdout.

// Spec is the first line the parent sends.
type Spec struct {
	MQTTAddr    string       `json:"mqtt_addr"`
	ServerURL   string       `json:"server_url"`
	Devices     []Credential `json:"devices"`
	LocalSkills int          `json:"local_skills"`
	Workers     int          `json:"workers"`
}

type command struct {
	Cmd     string `json:"cmd"` // expect, wait, settled, close
	Skill   string `json:"skill,omitempty"`
	Present bool   `json:"present,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

type event struct {
	Event       string       `json:"event"` // connecting, ready, ok, progress, converged, settled, closed, error
	N           int          `json:"n,omitempty"`
	Total       int          `json:"total,omitempty"`
	Convergence *Convergence `json:"convergence,omitempty"`
	Errors      *Errors      `json:"errors,omitempty"`
	Downloads   int64        `json:"downloads,omitempty"`
	Bytes       int64        `json:"bytes,omitempty"`
	Error       string       `json:"error,omitempty"`
}

// Serve runs a simulated fleet for a parent process: it reads the Spec and
// then commands from r and writes events to w, until `close` or the end of r.
func Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 1<<20), 256<<20)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	}
	if !in.Scan() {
		return errors.New("fleetbench: no spec on stdin")
	}
	var spec Spec
	if err := json.Unmarshal(in.Bytes(), &spec); err != nil {
		return fmt.Errorf("fleetbench: spec: %w", err)
	}
	f, err := Start(ctx, SimConfig{MQTTAddr: spec.MQTTAddr, ServerURL: spec.ServerURL, Devices: spec.Devices,
		LocalSkills: spec.LocalSkills, Workers: spec.Workers,
		Progress: func(n, total int) { send(event{Event: "connecting", N: n, Total: total}) }})
	if err != nil {
		send(event{Event: "error", Error: err.Error()})
		return err
	}
	defer f.Close()
	send(event{Event: "ready", N: f.Len()})
	cmds := make(chan command)
	readErr := make(chan error, 1)
	go func() { // the reader: a command that arrives during a wait ends the wait
		defer close(cmds)
		for in.Scan() {
			var c command
			if err := json.Unmarshal(in.Bytes(), &c); err != nil {
				readErr <- fmt.Errorf("fleetbench: command: %w", err)
				return
			}
			cmds <- c
		}
		readErr <- in.Err()
	}()
	var next *command
	for {
		c, ok := next, true
		if c == nil {
			var got command
			got, ok = <-cmds
			c = &got
		}
		next = nil
		if !ok {
			return <-readErr
		}
		switch c.Cmd {
		case "expect":
			f.Expect(c.Skill, c.Present)
			send(event{Event: "ok"})
		case "settled":
			send(event{Event: "settled", N: f.Settled(), Total: f.Len()})
		case "wait":
			d, _ := time.ParseDuration(c.Timeout)
			wctx, cancel := context.WithCancel(ctx)
			interrupted := make(chan *command, 1)
			go func() {
				select {
				case nc, ok := <-cmds:
					if ok {
						interrupted <- &nc
					} else {
						interrupted <- &command{Cmd: "close"}
					}
					cancel()
				case <-wctx.Done():
					interrupted <- nil
				}
			}()
			conv, err := waitWithProgress(wctx, f, d, func(n int) { send(event{Event: "progress", N: n, Total: f.Len()}) })
			cancel()
			next = <-interrupted
			e := event{Event: "converged", Convergence: &conv}
			if err != nil {
				e.Error = err.Error()
			}
			send(e)
		case "close":
			f.Close()
			errs := f.Errors()
			n, b := f.Downloads()
			send(event{Event: "closed", Errors: &errs, Downloads: n, Bytes: b})
			return nil
		}
	}
}

// waitWithProgress is Wait bounded by d, calling progress every second.
func waitWithProgress(ctx context.Context, f *Fleet, d time.Duration, progress func(int)) (Convergence, error) {
	if d <= 0 {
		d = time.Hour
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				progress(f.Converged())
			}
		}
	}()
	c, err := f.Wait(ctx)
	close(stop)
	wg.Wait()
	return c, err
}

// Remote drives a simulated fleet in a child process over its stdin and
// stdout (see Serve).
type Remote struct {
	w        io.Writer
	events   chan event
	progress atomic.Int64
	mu       sync.Mutex // serialises commands: one answer each
	readErr  chan error
}

// NewRemote sends spec to the child and returns once it reports every device
// connected (or an error). onConnecting sees the connection progress.
func NewRemote(ctx context.Context, stdin io.Writer, stdout io.Reader, spec Spec, onConnecting func(n, total int)) (*Remote, error) {
	r := &Remote{w: stdin, events: make(chan event, 16), readErr: make(chan error, 1)}
	go r.read(stdout, onConnecting)
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("fleet process: %w", err)
	}
	e, err := r.next(ctx)
	if err != nil {
		return nil, err
	}
	if e.Event != "ready" {
		return nil, fmt.Errorf("fleet process: %s", e.Error)
	}
	return r, nil
}

func (r *Remote) read(stdout io.Reader, onConnecting func(n, total int)) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Event {
		case "connecting":
			if onConnecting != nil {
				onConnecting(e.N, e.Total)
			}
		case "progress":
			r.progress.Store(int64(e.N))
		default:
			r.events <- e
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	r.readErr <- fmt.Errorf("fleet process ended: %w", err)
	close(r.events)
}

func (r *Remote) next(ctx context.Context) (event, error) {
	select {
	case e, ok := <-r.events:
		if !ok {
			return event{}, <-r.readErr
		}
		if e.Event == "error" {
			return e, fmt.Errorf("fleet process: %s", e.Error)
		}
		return e, nil
	case <-ctx.Done():
		return event{}, ctx.Err()
	}
}

func (r *Remote) call(ctx context.Context, c command) (event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(c)
	if _, err := r.w.Write(append(b, '\n')); err != nil {
		return event{}, fmt.Errorf("fleet process: %w", err)
	}
	return r.next(ctx)
}

// Expect sets the goal in the child (see Fleet.Expect).
func (r *Remote) Expect(ctx context.Context, skill string, present bool) error {
	r.progress.Store(0)
	_, err := r.call(ctx, command{Cmd: "expect", Skill: skill, Present: present})
	return err
}

// Settled asks how many devices applied their first desired document.
func (r *Remote) Settled(ctx context.Context) (int, error) {
	e, err := r.call(ctx, command{Cmd: "settled"})
	return e.N, err
}

// Wait waits up to d for the goal (see Fleet.Wait).
func (r *Remote) Wait(ctx context.Context, d time.Duration) (Convergence, error) {
	e, err := r.call(ctx, command{Cmd: "wait", Timeout: d.String()})
	if err != nil {
		return Convergence{}, err
	}
	var c Convergence
	if e.Convergence != nil {
		c = *e.Convergence
	}
	if e.Error != "" {
		return c, errors.New(e.Error)
	}
	return c, nil
}

// Converged is the latest progress the child reported.
func (r *Remote) Converged() int { return int(r.progress.Load()) }

// Close disconnects the devices and returns their error counts and downloads.
func (r *Remote) Close(ctx context.Context) (Errors, int64, int64, error) {
	e, err := r.call(ctx, command{Cmd: "close"})
	for err == nil && e.Event != "closed" { // a late answer to an abandoned wait
		e, err = r.next(ctx)
	}
	if err != nil || e.Errors == nil {
		return Errors{}, 0, 0, err
	}
	return *e.Errors, e.Downloads, e.Bytes, nil
}

// Local adapts an in-process Fleet to the same calls as Remote.
type Local struct{ F *Fleet }

func (l Local) Expect(_ context.Context, skill string, present bool) error {
	l.F.Expect(skill, present)
	return nil
}
func (l Local) Settled(context.Context) (int, error) { return l.F.Settled(), nil }
func (l Local) Wait(ctx context.Context, d time.Duration) (Convergence, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return l.F.Wait(ctx)
}
func (l Local) Converged() int { return l.F.Converged() }
func (l Local) Close(context.Context) (Errors, int64, int64, error) {
	l.F.Close()
	n, b := l.F.Downloads()
	return l.F.Errors(), n, b, nil
}
