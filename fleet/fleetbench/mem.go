package fleetbench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// GoMem is what the Go runtime says the process holds at a phase boundary,
// next to the kernel's VmHWM: it separates live heap, heap the GC has not yet
// collected or returned, and goroutine stacks.
type GoMem struct {
	HeapAllocMiB    float64 `json:"heap_alloc_mib"`    // live + not yet swept
	HeapInuseMiB    float64 `json:"heap_inuse_mib"`    // spans in use
	HeapIdleMiB     float64 `json:"heap_idle_mib"`     // free spans, returned or not
	HeapReleasedMiB float64 `json:"heap_released_mib"` // returned to the OS
	StackInuseMiB   float64 `json:"stack_inuse_mib"`
	SysMiB          float64 `json:"sys_mib"`         // everything the runtime mapped
	TotalAllocMiB   float64 `json:"total_alloc_mib"` // allocated since the start: the difference of two phases is what was allocated between them
	Goroutines      int     `json:"goroutines"`
	NumGC           uint32  `json:"num_gc"`
}

// ReadGoMem reads the runtime's figures now.
func ReadGoMem() GoMem {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	return GoMem{
		HeapAllocMiB: mib(m.HeapAlloc), HeapInuseMiB: mib(m.HeapInuse), HeapIdleMiB: mib(m.HeapIdle),
		HeapReleasedMiB: mib(m.HeapReleased), StackInuseMiB: mib(m.StackInuse), SysMiB: mib(m.Sys),
		TotalAllocMiB: mib(m.TotalAlloc), Goroutines: runtime.NumGoroutine(), NumGC: m.NumGC,
	}
}

// writeHeapProfile writes the heap profile (in-use and allocated since start)
// to prefix.<phase>.pb.gz; ":" in phase names becomes "-".
func writeHeapProfile(prefix, phase string) error {
	path := fmt.Sprintf("%s.%s.pb.gz", prefix, strings.ReplaceAll(phase, ":", "-"))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// PeakInterval is how often the peak sampler reads the runtime's figures.
const PeakInterval = 20 * time.Millisecond

// peakProfileStep is how far heap in use must rise above the last peak
// profile's before another is written: a handful of profiles per run, not
// one per sample.
const peakProfileStep = 8 << 20

// GoMemPeak is the highest of the runtime's figures over the run, sampled
// every IntervalMs between the phase boundaries (where GoMem is read): the
// peak happens during a rollout, not at its ends.
type GoMemPeak struct {
	IntervalMs float64 `json:"interval_ms"`
	Samples    int     `json:"samples"`
	// HeapInuse is heap objects + unused (MemStats.HeapInuse).
	HeapInuse PeakAt `json:"heap_inuse"`
	Stacks    PeakAt `json:"stacks"`
	// Total is everything the runtime mapped (MemStats.Sys); Resident is
	// Total minus the heap returned to the OS, the part VmHWM follows.
	Total    PeakAt `json:"total"`
	Resident PeakAt `json:"total_minus_released"`
	// Profile is the last PREFIX.peak.pb.gz: written after the first GC
	// that ends following a new maximum of heap in use (--heapprofile).
	Profile *PeakAt `json:"heap_profile,omitempty"`
}

// PeakAt is one maximum, when it happened, and the runtime's breakdown then.
type PeakAt struct {
	MiB          float64    `json:"mib"`
	Phase        string     `json:"after_phase"` // the last phase boundary passed
	AfterPhaseMs float64    `json:"ms_after_phase"`
	Breakdown    MemClasses `json:"breakdown"`
}

// MemClasses is a runtime/metrics breakdown (MiB).
type MemClasses struct {
	HeapObjects  float64 `json:"heap_objects"`  // live + garbage not yet swept
	HeapUnused   float64 `json:"heap_unused"`   // in in-use spans, unallocated
	HeapFree     float64 `json:"heap_free"`     // free spans not returned
	HeapReleased float64 `json:"heap_released"` // returned to the OS
	Stacks       float64 `json:"stacks"`
	Other        float64 `json:"other"` // GC metadata, runtime structures, profiling buckets
	// Metadata and ProfilingBuckets are parts of Other: the runtime's span,
	// mcache and GC metadata, and the heap profile's buckets (which exist
	// whenever runtime.MemProfileRate is not 0).
	Metadata         float64 `json:"metadata"`
	ProfilingBuckets float64 `json:"profiling_buckets"`
	HeapLive         float64 `json:"heap_live_last_gc"`
	HeapGoal         float64 `json:"heap_goal"`
	Goroutines       uint64  `json:"goroutines"`
	GCCycles         uint64  `json:"gc_cycles"`
}

var peakMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/sched/goroutines:goroutines",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
}

// peakSampler reads peakMetrics every PeakInterval until stopped and keeps
// the maxima; at most one goroutine, ended by stop.
type peakSampler struct {
	mu      sync.Mutex
	phase   string
	phaseAt time.Time
	peak    GoMemPeak

	profile string // heap profile prefix; "" writes none
	errs    []string
	done    chan struct{}
	stopped chan struct{}
}

func startPeakSampler(profilePrefix string) *peakSampler {
	p := &peakSampler{phase: "start", phaseAt: time.Now(), profile: profilePrefix,
		done: make(chan struct{}), stopped: make(chan struct{})}
	p.peak.IntervalMs = ms(PeakInterval)
	go p.run()
	return p
}

// setPhase marks a phase boundary.
func (p *peakSampler) setPhase(name string) {
	p.mu.Lock()
	p.phase, p.phaseAt = name, time.Now()
	p.mu.Unlock()
}

// stop ends the sampler and returns its maxima and the errors of writing
// the peak profile.
func (p *peakSampler) stop() (GoMemPeak, []string) {
	close(p.done)
	<-p.stopped
	return p.peak, p.errs
}

func (p *peakSampler) run() {
	defer close(p.stopped)
	samples := make([]metrics.Sample, len(peakMetrics))
	for i, n := range peakMetrics {
		samples[i].Name = n
	}
	t := time.NewTicker(PeakInterval)
	defer t.Stop()
	var profiledInuse uint64 // heap in use when the last peak profile was triggered
	pendingCycle := uint64(0)
	var pending *PeakAt
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		metrics.Read(samples)
		v := func(i int) uint64 {
			if samples[i].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return samples[i].Value.Uint64()
		}
		mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
		objects, unused, free, released, stacks, total := v(0), v(1), v(2), v(3), v(4), v(5)
		cycles := v(9)
		c := MemClasses{HeapObjects: mib(objects), HeapUnused: mib(unused), HeapFree: mib(free), HeapReleased: mib(released),
			Stacks: mib(stacks), Other: mib(total - objects - unused - free - released - stacks),
			HeapLive: mib(v(6)), HeapGoal: mib(v(7)), Goroutines: v(8), GCCycles: cycles,
			Metadata: mib(v(10) + v(11) + v(12) + v(13) + v(14)), ProfilingBuckets: mib(v(15))}
		p.mu.Lock()
		at := func(b uint64) PeakAt {
			return PeakAt{MiB: mib(b), Phase: p.phase, AfterPhaseMs: ms(time.Since(p.phaseAt)), Breakdown: c}
		}
		pk := &p.peak
		pk.Samples++
		inuse := objects + unused
		newInuse := mib(inuse) > pk.HeapInuse.MiB
		if newInuse {
			pk.HeapInuse = at(inuse)
		}
		if mib(stacks) > pk.Stacks.MiB {
			pk.Stacks = at(stacks)
		}
		if mib(total) > pk.Total.MiB {
			pk.Total = at(total)
		}
		if mib(total-released) > pk.Resident.MiB {
			pk.Resident = at(total - released)
		}
		if p.profile != "" && newInuse && inuse >= profiledInuse+peakProfileStep {
			// The heap profile is as of the last GC's mark: wait for the
			// cycle running now to end, so it shows what this peak held.
			profiledInuse, pendingCycle = inuse, cycles
			a := at(inuse)
			pending = &a
		}
		write := pending != nil && cycles > pendingCycle
		if write {
			a := at(inuse)
			a.MiB = pending.MiB
			pk.Profile, pending = &a, nil
		}
		p.mu.Unlock()
		if write {
			if err := writeHeapProfile(p.profile, "peak"); err != nil {
				p.errs = append(p.errs[:0], "peak heap profile: "+err.Error())
			}
		}
	}
}
