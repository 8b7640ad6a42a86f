package configs

import (
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"256MiB": 256 << 20, "1GiB": 1 << 30, "1 GiB": 1 << 30, "536870912": 536870912, "8192KiB": 8 << 20,
		"5000000B": 5000000, "2TiB": 2 << 40,
	} {
		got, set, err := ParseMemoryLimit(in)
		if err != nil || !set || got != want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v, %v; want %d", in, got, set, err, want)
		}
	}
	for _, in := range []string{"", "off", " "} {
		if n, set, err := ParseMemoryLimit(in); err != nil || set || n != 0 {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v, %v; want no limit", in, n, set, err)
		}
	}
	for in, says := range map[string]string{
		"256M": "unit B, KiB, MiB", "256MB": "unit B, KiB, MiB", "1.5GiB": "whole number", "-1MiB": "whole number",
		"lots": "e.g. 256MiB", "256": "at least 4MiB", "9999999999TiB": "too large",
	} {
		_, _, err := ParseMemoryLimit(in)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseMemoryLimit(%q) err = %v, want one saying %q", in, err, says)
		}
	}
}

func TestMemoryLimitInConfig(t *testing.T) {
	cfg := Default()
	cfg.MemoryLimit = "300MiB"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.MemoryLimit = "300M"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "memory_limit") {
		t.Fatalf("Validate with memory_limit 300M: %v", err)
	}
}
