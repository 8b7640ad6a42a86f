package catalog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// syntheticCatalog makes n skills with a skewed vocabulary, deterministic
// across runs so benchmark results compare.
func syntheticCatalog(n int) []Entry {
	vocab := strings.Fields(`weather forecast city timer alarm music radio news light
		lamp thermostat heating door lock camera garden water plant calendar reminder
		shopping list recipe kitchen translate joke story podcast volume screen clock
		battery energy solar car traffic train bus flight hotel stock price sports score`)
	rng := rand.New(rand.NewPCG(2, 2))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			// Squaring skews toward the front: some words common, some rare.
			w[i] = vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
		}
		return strings.Join(w, " ")
	}
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{
			ID:          fmt.Sprintf("%s-%04d.chorus", vocab[rng.IntN(len(vocab))], i),
			Title:       words(2),
			Description: words(10),
			Tags:        strings.Fields(words(3)),
			Body:        words(60),
		}
	}
	return entries
}

// BenchmarkSearch1000 is the catalog search target of the performance issue:
// one query over 1,000 skills.
func BenchmarkSearch1000(b *testing.B) {
	ix := NewIndex(syntheticCatalog(1000))
	b.ReportAllocs()
	for b.Loop() {
		if len(ix.Search("weather forecast for my city", 10)) == 0 {
			b.Fatal("no results")
		}
	}
}

// The short-limit path (a sorted buffer) must rank exactly as a full sort.
func TestSearchLimitMatchesFullSort(t *testing.T) {
	ix := NewIndex(syntheticCatalog(1000))
	for _, q := range []string{"weather", "weather forecast city", "solar energy price", "music", "kitchen timer alarm"} {
		for _, limit := range []int{1, 5, 10, 100} {
			full := ix.Search(q, 0)
			got := ix.Search(q, limit)
			want := full[:min(limit, len(full))]
			if len(got) != len(want) {
				t.Fatalf("Search(%q, %d): %d results, want %d", q, limit, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
					t.Errorf("Search(%q, %d)[%d] = %s %v, want %s %v", q, limit, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
			}
		}
	}
}

func BenchmarkResolveTypo1000(b *testing.B) {
	ix := NewIndex(syntheticCatalog(1000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ix.Resolve("wether"); err == nil {
			b.Fatal("resolved a typo")
		}
	}
}

func BenchmarkNewIndex1000(b *testing.B) {
	entries := syntheticCatalog(1000)
	b.ReportAllocs()
	for b.Loop() {
		NewIndex(entries)
	}
}
