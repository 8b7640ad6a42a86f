package discovery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// tree lays out a small catalog under base and returns its config.
func tree(t *testing.T, base string) Config {
	t.Helper()
	b, i := filepath.Join(base, "b"), filepath.Join(base, "i")
	mkSkill(t, b, "alpha", doc("", "exec: run.sh", "requirements: [network]"))
	mkSkill(t, b, "beta", doc("", "exec: run.sh", "version: 1.0.0"))
	mkSkill(t, i, "gamma", doc("", "name: gamma"))
	return Config{Bundled: []string{b}, Installed: i}
}

func TestDigest(t *testing.T) {
	base := t.TempDir()
	cfg := tree(t, base)
	first := discover(t, cfg).Digest()
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(first) {
		t.Fatalf("digest %q is not sha256:<hex>", first)
	}
	if again := discover(t, cfg).Digest(); again != first {
		t.Fatalf("digest not stable: %s then %s", first, again)
	}
	if moved := discover(t, tree(t, t.TempDir())).Digest(); moved != first {
		t.Errorf("digest depends on where the roots live: %s vs %s", first, moved)
	}
	changes := []struct {
		name   string
		change func(t *testing.T)
	}{
		{"exec content", func(t *testing.T) { write(t, filepath.Join(base, "b", "alpha", "run.sh"), script+"#\n", 0o755) }},
		{"exec bit (gate result)", func(t *testing.T) { os.Chmod(filepath.Join(base, "b", "beta", "run.sh"), 0o644) }},
		{"SKILL.md prose", func(t *testing.T) {
			write(t, filepath.Join(base, "b", "beta", "SKILL.md"), doc("New prose.\n", "exec: run.sh", "version: 1.0.0"), 0o644)
		}},
		{"declared version", func(t *testing.T) {
			write(t, filepath.Join(base, "b", "beta", "SKILL.md"), doc("", "exec: run.sh", "version: 1.0.1"), 0o644)
		}},
		{"requirements", func(t *testing.T) {
			write(t, filepath.Join(base, "b", "alpha", "SKILL.md"), doc("", "exec: run.sh", "requirements: [network, gui]"), 0o644)
		}},
		{"a new skill", func(t *testing.T) { mkSkill(t, filepath.Join(base, "i"), "delta", okDoc("")) }},
	}
	seen := map[string]string{first: "initial"}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			ch.change(t)
			d := discover(t, cfg).Digest()
			if prev, dup := seen[d]; dup {
				t.Fatalf("digest %s unchanged (same as after %q)", d, prev)
			}
			seen[d] = ch.name
		})
	}
}

func TestManifest(t *testing.T) {
	c := discover(t, tree(t, t.TempDir()))
	m := c.Manifest()
	if m.Digest != c.Digest() || len(m.Entries) != 3 {
		t.Fatalf("manifest = %+v", m)
	}
	alpha, gamma := m.Entries[0], m.Entries[2]
	if alpha.ID != "alpha" || alpha.Dir != "alpha" || alpha.Root != RootBundled || !alpha.Gate.OK ||
		alpha.ExecSHA256 != sha(script) || alpha.DocSHA256 == "" || !reflect.DeepEqual(alpha.Requirements, []string{"network"}) {
		t.Errorf("alpha entry = %+v", alpha)
	}
	if gamma.Gate.OK || gamma.Gate.Error != "no exec" || gamma.ExecSHA256 != "" || gamma.Root != RootInstalled {
		t.Errorf("gamma entry = %+v", gamma)
	}
	// The digest is over the canonical (sorted keys, compact) JSON of the
	// entries, so anyone holding the entries can recompute it.
	raw, _ := json.Marshal(m.Entries)
	var generic []map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(generic) // maps encode with sorted keys
	if string(sorted) != string(raw) {
		t.Errorf("entry JSON keys are not in sorted order:\n%s\n%s", raw, sorted)
	}
	if got := digestOf(m.Entries); got != m.Digest {
		t.Errorf("recomputed digest %s != %s", got, m.Digest)
	}
	if !strings.Contains(string(raw), `"requirements":[]`) {
		t.Errorf("empty requirements must encode as [], got %s", raw)
	}
}

func TestEmptyCatalogs(t *testing.T) {
	var nilCat *Catalog
	empty := discover(t, Config{})
	for name, c := range map[string]*Catalog{"nil": nilCat, "zero": {}, "discovered": empty} {
		if c.Digest() != empty.Digest() || len(c.Entries()) != 0 || len(c.Loadable()) != 0 || len(c.Problems()) != 0 {
			t.Errorf("%s catalog is not empty: %q", name, c.Digest())
		}
		if _, ok := c.Get("x"); ok {
			t.Errorf("%s catalog found x", name)
		}
		if m := c.Manifest(); m.Entries == nil || len(m.Entries) != 0 {
			t.Errorf("%s manifest entries = %#v, want []", name, m.Entries)
		}
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	c := discover(t, tree(t, t.TempDir()))
	s, _ := c.Get("alpha")
	s.Requirements[0] = "mutated"
	c.Entries()[0].Requirements[0] = "mutated"
	if got, _ := c.Get("alpha"); got.Requirements[0] != "network" {
		t.Errorf("catalog was mutated through a returned skill: %v", got.Requirements)
	}
}

func TestStore(t *testing.T) {
	var st Store
	if c := st.Load(); c == nil || len(c.Entries()) != 0 {
		t.Fatalf("zero Store Load = %v, want an empty catalog", c)
	}
	a := discover(t, tree(t, t.TempDir()))
	if prev := st.Swap(a); prev == nil || len(prev.Entries()) != 0 {
		t.Errorf("first Swap returned %v, want an empty catalog", prev)
	}
	if st.Load() != a {
		t.Error("Load after Swap is not the swapped catalog")
	}
	if prev := st.Swap(nil); prev != a || st.Load() == nil {
		t.Error("Swap(nil) did not return the previous catalog or left nil")
	}
}

// Readers racing a writer see whole catalogs only (run with -race).
func TestStoreConcurrent(t *testing.T) {
	var st Store
	base := t.TempDir()
	small := discover(t, tree(t, base))
	mkSkill(t, filepath.Join(base, "i"), "delta", okDoc(""))
	big := discover(t, Config{Bundled: []string{filepath.Join(base, "b")}, Installed: filepath.Join(base, "i")})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := st.Load()
				if n := len(c.Entries()); n != 0 && n != 3 && n != 4 {
					t.Errorf("reader saw %d entries", n)
					return
				}
				if c.Manifest().Digest != c.Digest() {
					t.Error("manifest and digest disagree")
					return
				}
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			st.Swap(small)
		} else {
			st.Swap(big)
		}
	}
	close(stop)
	wg.Wait()
}
