package brokerbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/chorus-edge/chorus/broker"
)

// The brokers Run starts, by the name they have in the report.
const (
	KindChorus        = "chorus"         // Chorus's broker with its store
	KindChorusNoStore = "chorus-nostore" // Chorus's broker without its store hook
	KindBareMochi     = "mochi-bare"     // mochi with an allow-all hook
)

// benchClients is how many publisher and subscriber accounts Run's Chorus
// brokers have (the largest fan-out is 100).
const benchClients = 100

// Start starts a broker of kind (Kind*) in this process; a Chorus broker
// with its store keeps it under dataDir.
func Start(kind, dataDir string) (*Broker, error) {
	switch kind {
	case KindChorus:
		return StartChorus(dataDir, benchClients)
	case KindChorusNoStore:
		return StartChorus("", benchClients)
	case KindBareMochi:
		return StartBareMochi()
	}
	return nil, fmt.Errorf("broker bench: unknown broker %q (want %s, %s or %s)", kind, KindChorus, KindChorusNoStore, KindBareMochi)
}

// served is the line a broker process (ServeBroker) writes once its broker
// listens, and StartProcess reads: one definition for both ends.
type served struct {
	Name    string            `json:"name"`
	Addr    string            `json:"addr"`
	Secrets map[string]string `json:"secrets,omitempty"` // Chorus's account secrets, by "pub0", "sub3", ...
	Error   string            `json:"error,omitempty"`   // the broker did not start
}

// statsRequest is the line StartProcess's Stats writes; the process answers
// with the broker's broker.Stats as one JSON line.
const statsRequest = "stats"

// ServeBroker is the child side of a broker process (`chorus bench
// broker-serve`): it starts a broker of kind, writes a served line to out,
// answers every statsRequest line from in with a broker.Stats line, and
// stops the broker when in ends or ctx is done. Running each broker in a
// process of its own, as the --mqtt-url anchor runs in its own, keeps the
// load generator's goroutines and garbage out of the broker's process and
// the other way round.
func ServeBroker(ctx context.Context, kind, dataDir string, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	b, err := Start(kind, dataDir)
	if err != nil {
		_ = enc.Encode(served{Name: kind, Error: err.Error()})
		return err
	}
	defer b.Close()
	if err := enc.Encode(served{Name: b.Name, Addr: b.Addr, Secrets: b.secrets}); err != nil {
		return fmt.Errorf("broker process: write the address: %w", err)
	}
	lines := make(chan string)
	go func() { // ends when in ends (the parent closes it, or exits)
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			if l != statsRequest {
				return fmt.Errorf("broker process: unknown request %q (want %q)", l, statsRequest)
			}
			if err := enc.Encode(b.Stats()); err != nil {
				return fmt.Errorf("broker process: write stats: %w", err)
			}
		}
	}
}

// startTimeout bounds how long a broker process may take to listen, and
// stopTimeout how long it may take to stop once asked.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// StartProcess starts cmd, a broker process (ServeBroker), and returns the
// broker it serves. Its Stats asks the process for its counters; Close ends
// its input and waits for it to exit, killing it after stopTimeout.
func StartProcess(cmd *exec.Cmd) (*Broker, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("broker process: %w", err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("broker process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("broker process: start %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, in: in, out: json.NewDecoder(outPipe)}
	var s served
	if err := p.read(&s, startTimeout); err != nil {
		p.stop()
		return nil, fmt.Errorf("broker process %s: read its address: %w", cmd.Path, err)
	}
	if s.Error != "" {
		p.stop()
		return nil, fmt.Errorf("broker process: %s", s.Error)
	}
	t := Target{Name: s.Name, Addr: s.Addr}
	if s.Secrets != nil {
		t.Login = chorusLogin(s.Secrets)
	}
	return &Broker{Target: t, close: p.stop, stats: p.stats}, nil
}

// process is the parent's side of one broker process; its methods are
// called from one goroutine (Run's).
type process struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

// read decodes the process's next line into v within d; on a timeout the
// process is killed, which ends the read.
func (p *process) read(v any, d time.Duration) error {
	t := time.AfterFunc(d, func() { _ = p.cmd.Process.Kill() })
	defer t.Stop()
	if err := p.out.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("it exited first (its stderr says why)")
		}
		return err
	}
	return nil
}

// stats asks for the broker's counters; zero if the process does not answer.
func (p *process) stats() broker.Stats {
	var st broker.Stats
	if _, err := io.WriteString(p.in, statsRequest+"\n"); err != nil {
		return st
	}
	if err := p.read(&st, startTimeout); err != nil {
		return broker.Stats{}
	}
	return st
}

// stop ends the process's input, which stops its broker, and waits for it.
func (p *process) stop() error {
	_ = p.in.Close()
	t := time.AfterFunc(stopTimeout, func() { _ = p.cmd.Process.Kill() })
	defer t.Stop()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("broker process %s: %w", p.cmd.Path, err)
	}
	return nil
}
