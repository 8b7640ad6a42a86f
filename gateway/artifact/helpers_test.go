package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// writeTree creates files under dir: name → content; a name ending in '*'
// is created executable (without the '*').
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := fs.FileMode(0o644)
		if name[len(name)-1] == '*' {
			name, mode = name[:len(name)-1], 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func skillTree() map[string]string {
	return map[string]string{
		"SKILL.md":        "---\nname: hello\nexec: run.sh\n---\nSays hello.\n",
		"run.sh*":         "#!/bin/sh\necho hello\n",
		"data/greet.txt":  "hi\n",
		"data/deep/x.bin": string(bytes.Repeat([]byte{0, 1, 2}, 1000)),
	}
}

func pack(t testing.TB, dir string) ([]byte, Info) {
	t.Helper()
	var buf bytes.Buffer
	info, err := Pack(dir, &buf)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return buf.Bytes(), info
}

// entry is one hand-built tar entry for malicious archives.
type entry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}, body: body}
}

// buildTar writes entries as a tar.gz exactly as given, bypassing Pack.
func buildTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("WriteHeader %q: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("Write %q: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// listTree returns every path under dir (slash-separated, relative) with
// its mode, for comparisons.
func listTree(t testing.TB, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forEachHeader calls fn for every header of a tar.gz.
func forEachHeader(t testing.TB, b []byte, fn func(*tar.Header)) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			return
		}
		fn(h)
	}
}
