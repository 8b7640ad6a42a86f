package fleetbench

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// TestPeakMetricsExist: every figure the peak sampler reads is one the
// runtime has, as an integer (an unknown name reads as KindBad, which the
// sampler would report as 0).
func TestPeakMetricsExist(t *testing.T) {
	kinds := map[string]metrics.ValueKind{}
	for _, d := range metrics.All() {
		kinds[d.Name] = d.Kind
	}
	for _, n := range peakMetrics {
		if k, ok := kinds[n]; !ok || k != metrics.KindUint64 {
			t.Errorf("runtime/metrics %q: known %v, kind %v; want a uint64 metric", n, ok, k)
		}
	}
}

// TestPeakSamplerWritesPeakProfile: the sampler records maxima under the
// phase set last and writes PREFIX.peak.pb.gz once a GC has ended after its
// first maximum.
func TestPeakSamplerWritesPeakProfile(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "p")
	p := startPeakSampler(prefix)
	p.setPhase("install:start")
	hold := make([]byte, 16<<20)
	poll.Until(t, "the peak heap profile written", 30*time.Second, func() bool {
		runtime.GC() // ends a cycle after the sampler's first maximum
		_, err := os.Stat(prefix + ".peak.pb.gz")
		return err == nil
	})
	pk, errs := p.stop()
	runtime.KeepAlive(hold)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if pk.Samples == 0 || pk.HeapInuse.MiB <= 0 || pk.Stacks.MiB <= 0 || pk.Total.MiB < pk.HeapInuse.MiB || pk.Resident.MiB <= 0 {
		t.Errorf("implausible maxima %+v", pk)
	}
	if pk.Profile == nil || pk.Profile.Phase != "install:start" || pk.Profile.Breakdown.GCCycles == 0 {
		t.Errorf("profile %+v; want one written after install:start with the GC count read", pk.Profile)
	}
}
