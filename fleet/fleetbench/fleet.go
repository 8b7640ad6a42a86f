// Package fleetbench simulates a fleet of satellites for `chorus bench
// fleet`: every device is a real MQTT 5 connection (paho.golang over a plain
// net.Conn, no autopaho, to keep the per-device cost low) with the device's
// own credentials; it publishes birth, availability (with a delayed Will),
// connectivity and skills as the agent does, watches its retained desired
// document, downloads and verifies every artifact it names over HTTP with
// the device's Basic auth, and reports the skills loaded with the document's
// applied_version. Skill processes are simulated.
//
// Goroutines: paho's per connection, Workers appliers (the download and
// report work, so the number of HTTP requests in flight is bounded), all
// stopped and waited for by Close.
package fleetbench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// SimConfig configures a simulated fleet. MQTTAddr, ServerURL and Devices are
// required.
type SimConfig struct {
	MQTTAddr  string // host:port of the broker's TCP listener
	ServerURL string // the gateway's HTTP base URL (artifacts)
	Devices   []Credential

	// LocalSkills is the number of skills each device reports as its own
	// (bundled, not fleet-managed), to give the skills report a real size.
	LocalSkills int
	// ConnectConcurrency bounds connections being set up at once (64).
	ConnectConcurrency int
	// Workers bound desired documents being applied at once, and so HTTP
	// downloads in flight (32).
	Workers int
	// Progress, when set, is called about once a second while connecting.
	Progress func(connected, total int)
	Logger   *slog.Logger
}

// Fleet is a running simulated fleet.
type Fleet struct {
	cfg         SimConfig
	log         *slog.Logger
	devices     []*device
	localSkills []string
	fetcher     *fetcher
	work        chan *device

	clientErrors, serverDisconnects, applyErrors atomic.Int64

	goalMu sync.Mutex // guards the goal fields; never held across I/O
	goal   *goal

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Start connects every device with bounded concurrency and starts the
// workers. It returns once every device is connected and has published its
// state, or the first error (having closed what it started).
func Start(ctx context.Context, cfg SimConfig) (*Fleet, error) {
	if cfg.MQTTAddr == "" || cfg.ServerURL == "" || len(cfg.Devices) == 0 {
		return nil, errors.New("fleetbench: MQTTAddr, ServerURL and Devices are required")
	}
	if cfg.ConnectConcurrency <= 0 {
		cfg.ConnectConcurrency = 64
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{cfg: cfg, log: cfg.Logger, work: make(chan *device, len(cfg.Devices)),
		fetcher: newFetcher(cfg.ServerURL, cfg.Workers)}
	for i := range cfg.LocalSkills {
		f.localSkills = append(f.localSkills, fmt.Sprintf("local%03d.bench", i))
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	for range cfg.Workers {
		f.wg.Add(1)
		go f.runWorker()
	}
	if err := f.connectAll(ctx); err != nil {
		f.Close()
		return nil, err
	}
	// Collect now, before anything is timed: every paho client holds a
	// channel of 65,535 pointers (the devices announce no Receive Maximum,
	// as the agent does not: gateway/bus), 5 GB at 10,000 devices, and a
	// collection that starts during a rollout scans all of it on the
	// machine the gateway shares; after this one the next is a heap's
	// worth of allocation away, more than the rollouts allocate.
	runtime.GC()
	return f, nil
}

func (f *Fleet) runWorker() {
	defer f.wg.Done()
	for {
		select {
		case <-f.ctx.Done():
			return
		case d := <-f.work:
			d.apply(f.ctx)
		}
	}
}

func (f *Fleet) connectAll(ctx context.Context) error {
	sem := make(chan struct{}, f.cfg.ConnectConcurrency)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		done  atomic.Int64
	)
	stop := f.progress(&done)
	defer stop()
	for _, c := range f.cfg.Devices {
		t, err := newTopics(c.Device)
		if err != nil {
			return err
		}
		d := &device{f: f, id: c.Device, pass: c.Password, session: 1, topics: t}
		f.devices = append(f.devices, d)
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := d.connect(ctx); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			done.Add(1)
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// progress calls cfg.Progress every second until stop.
func (f *Fleet) progress(done *atomic.Int64) (stop func()) {
	if f.cfg.Progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				f.cfg.Progress(int(done.Load()), len(f.cfg.Devices))
				return
			case <-t.C:
				f.cfg.Progress(int(done.Load()), len(f.cfg.Devices))
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// Errors are the counts of trouble the devices met.
type Errors struct {
	ClientErrors      int64 `json:"client_errors"`      // connection errors seen by paho
	ServerDisconnects int64 `json:"server_disconnects"` // DISCONNECTs from the broker
	ApplyErrors       int64 `json:"apply_errors"`       // refused documents, failed downloads or reports
}

// Errors returns the counts so far.
func (f *Fleet) Errors() Errors {
	return Errors{ClientErrors: f.clientErrors.Load(), ServerDisconnects: f.serverDisconnects.Load(), ApplyErrors: f.applyErrors.Load()}
}

// Len is the number of devices.
func (f *Fleet) Len() int { return len(f.devices) }

// Settled reports how many devices have applied a desired document of at
// least version 1 (every enrolled device gets one).
func (f *Fleet) Settled() int {
	n := 0
	for _, d := range f.devices {
		d.mu.Lock()
		if d.applied > 0 {
			n++
		}
		d.mu.Unlock()
	}
	return n
}

// Close disconnects every device and stops the workers; idempotent.
func (f *Fleet) Close() {
	f.once.Do(func() {
		f.cancel()
		f.wg.Wait()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 256)
		for _, d := range f.devices {
			sem <- struct{}{}
			wg.Add(1)
			go func() { defer func() { <-sem; wg.Done() }(); d.close() }()
		}
		wg.Wait()
		f.fetcher.close()
	})
}

// goal is what every device must report for the run to converge.
type goal struct {
	skill   string
	present bool
	start   time.Time
	doneAt  map[string]time.Duration
	all     chan struct{}
	total   int
}

// Expect sets the next goal: every device reports skill installed
// (present) or absent, timed from now. Call it before the operator acts.
func (f *Fleet) Expect(skill string, present bool) {
	f.goalMu.Lock()
	f.goal = &goal{skill: skill, present: present, start: time.Now(), doneAt: map[string]time.Duration{},
		all: make(chan struct{}), total: len(f.devices)}
	f.goalMu.Unlock()
	for _, d := range f.devices { // a device already there counts at once
		d.mu.Lock()
		inst := d.installed
		d.mu.Unlock()
		f.observe(d, inst)
	}
}

// observe records when a device's published report first meets the goal.
func (f *Fleet) observe(d *device, installed map[string]desired.Skill) {
	f.goalMu.Lock()
	defer f.goalMu.Unlock()
	g := f.goal
	if g == nil {
		return
	}
	if _, done := g.doneAt[d.id]; done {
		return
	}
	if _, ok := installed[g.skill]; ok != g.present {
		return
	}
	g.doneAt[d.id] = time.Since(g.start)
	if len(g.doneAt) == g.total {
		close(g.all)
	}
}

// Convergence is the per-device time from Expect to the report that met the
// goal.
type Convergence struct {
	Devices   int     `json:"devices"`
	Converged int     `json:"converged"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// Wait waits until every device met the goal or ctx ends, and returns the
// distribution (of the devices that got there).
func (f *Fleet) Wait(ctx context.Context) (Convergence, error) {
	f.goalMu.Lock()
	g := f.goal
	f.goalMu.Unlock()
	if g == nil {
		return Convergence{}, errors.New("fleetbench: no goal set")
	}
	var err error
	select {
	case <-g.all:
	case <-ctx.Done():
		err = fmt.Errorf("devices did not converge: %w", ctx.Err())
	}
	f.goalMu.Lock()
	ds := make([]time.Duration, 0, len(g.doneAt))
	for _, v := range g.doneAt {
		ds = append(ds, v)
	}
	f.goalMu.Unlock()
	return summarize(ds, g.total), err
}

// Converged reports how many devices have met the current goal.
func (f *Fleet) Converged() int {
	f.goalMu.Lock()
	defer f.goalMu.Unlock()
	if f.goal == nil {
		return 0
	}
	return len(f.goal.doneAt)
}

func summarize(ds []time.Duration, total int) Convergence {
	c := Convergence{Devices: total, Converged: len(ds)}
	if len(ds) == 0 {
		return c
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	c.P50Ms, c.P95Ms, c.MaxMs = ms(Percentile(ds, 50)), ms(Percentile(ds, 95)), ms(ds[len(ds)-1])
	return c
}

// Percentile returns the p-th percentile (nearest rank) of sorted ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// fetcher downloads artifacts as the agent's installer does: GET on the
// gateway with the device's Basic auth, size and sha256 checked.
type fetcher struct {
	base string
	hc   *http.Client
	tr   *http.Transport

	bytes, downloads atomic.Int64
}

func newFetcher(base string, conns int) *fetcher {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 30 * time.Second}
	return &fetcher{base: strings.TrimRight(base, "/"), tr: tr, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

func (h *fetcher) fetch(ctx context.Context, user, pass string, s desired.Skill) error {
	u := s.URL
	if strings.HasPrefix(u, "/") {
		u = h.base + u
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, pass)
	resp, err := h.hc.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("download %s: %s", s.URL, resp.Status)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, io.LimitReader(resp.Body, s.Size+1))
	if err != nil {
		return fmt.Errorf("download %s: %w", s.URL, err)
	}
	h.bytes.Add(n)
	h.downloads.Add(1)
	if n != s.Size || hex.EncodeToString(sum.Sum(nil)) != s.SHA256 {
		return fmt.Errorf("download %s: %d bytes, sha256 mismatch or wrong size (want %d)", s.URL, n, s.Size)
	}
	return nil
}

func (h *fetcher) close() { h.tr.CloseIdleConnections() }

// Downloads returns the number of verified artifact downloads and their bytes.
func (f *Fleet) Downloads() (n, bytes int64) {
	return f.fetcher.downloads.Load(), f.fetcher.bytes.Load()
}

// DeviceIDs returns n device ids of the form <prefix>-00001.
func DeviceIDs(prefix string, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%05d", prefix, i+1)
		if err := topic.ValidDeviceID(ids[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
