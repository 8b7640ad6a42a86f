package fleetbench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
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
	SysMiB          float64 `json:"sys_mib"` // everything the runtime mapped
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
		Goroutines: runtime.NumGoroutine(), NumGC: m.NumGC,
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
