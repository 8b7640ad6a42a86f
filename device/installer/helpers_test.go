package installer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

const (
	testDevice = "pi-kitchen"
	testUser   = "pi-kitchen"
	testPass   = "s3cret"
)

// skillSrc writes a skill directory (SKILL.md + executable run.sh) named
// id with the given version and returns it.
func skillSrc(t testing.TB, id, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	md := fmt.Sprintf("---\nname: %s\nversion: %s\nexec: run.sh\nready: on-start\n---\nSays hello, version %s.\n", id, version, version)
	writeFile(t, filepath.Join(dir, "SKILL.md"), md, 0o644)
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho "+version+"\n", 0o755)
	return dir
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// art is one artifact as the gateway would serve it.
type art struct {
	data []byte
	sha  string
}

func packDir(t testing.TB, dir string) art {
	t.Helper()
	var buf bytes.Buffer
	info, err := artifact.Pack(dir, &buf)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return art{data: buf.Bytes(), sha: info.SHA256}
}

func packSkill(t testing.TB, id, version string) art {
	return packDir(t, skillSrc(t, id, version))
}

// rawArt wraps hand-built archive bytes.
func rawArt(data []byte) art {
	h := sha256.Sum256(data)
	return art{data: data, sha: hex.EncodeToString(h[:])}
}

// tarGz builds a tar.gz from name → content, bypassing Pack's rules.
func tarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func (a art) skill(version string) desired.Skill {
	return desired.Skill{Version: version, SHA256: a.sha, Size: int64(len(a.data)), URL: desired.ArtifactURL(a.sha)}
}

// request is what the server saw.
type request struct {
	path, rng string
	authOK    bool
}

// server is a real gateway stand-in on loopback: GET /v1/artifacts/<sha>
// behind Basic auth, with Range support (http.ServeContent), and a switch
// to drop the connection mid-body.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	blobs map[string][]byte // sha → bytes served (may be tampered)
	drops map[string]drop   // sha → connections to drop mid-body
	reqs  []request
}

func newServer(t testing.TB) *server {
	s := &server{blobs: map[string][]byte{}, drops: map[string]drop{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *server) add(a art) { s.put(a.sha, a.data) }

func (s *server) put(sha string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[sha] = data
}

func (s *server) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	u, p, ok := r.BasicAuth()
	authOK := ok && u == testUser && p == testPass
	sha := strings.TrimPrefix(r.URL.Path, desired.ArtifactPrefix)
	s.mu.Lock()
	s.reqs = append(s.reqs, request{path: r.URL.Path, rng: r.Header.Get("Range"), authOK: authOK})
	blob, found := s.blobs[sha]
	cut := 0
	if d, ok := s.drops[sha]; ok {
		cut, d.times = d.after, d.times-1
		s.drops[sha] = d
		if d.times <= 0 {
			delete(s.drops, sha)
		}
	}
	s.mu.Unlock()
	switch {
	case !authOK:
		w.Header().Set("WWW-Authenticate", `Basic realm="chorus"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	case !found:
		http.NotFound(w, r)
	case cut > 0:
		dropAfter(w, blob, cut)
	default:
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(blob))
	}
}

// drop makes the server send only after bytes, times times.
type drop struct{ after, times int }

// dropNext makes the next times requests for a drop after n bytes.
func (s *server) dropNext(sha string, n, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops[sha] = drop{after: n, times: times}
}

// dropAfter promises the whole blob, sends n bytes and closes the
// connection, as a gateway restart or a flaky link would.
func dropAfter(w http.ResponseWriter, blob []byte, n int) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/gzip\r\n\r\n", len(blob))
	buf.Write(blob[:n])
	buf.Flush()
}

// recorder is a bus that records what the installer emits. The bus client
// itself is tested in gateway/bus; here only the events matter.
type recorder struct {
	mu   sync.Mutex
	msgs []envelope.Message
}

func (r *recorder) Emit(_ context.Context, m envelope.Message) error {
	if _, err := envelope.Encode(m); err != nil {
		return err // what a real bus would refuse
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m.Clone())
	return nil
}

func (r *recorder) take() []envelope.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	return out
}

func types(msgs []envelope.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Type)
	}
	return out
}

// env is one installer under test with its data dir, server and bus.
type env struct {
	t       *testing.T
	data    string
	srv     *server
	bus     *recorder
	in      *Installer
	applied []appliedCall
}

type appliedCall struct {
	version int64
	managed []string
}

func newEnv(t *testing.T, tweak ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, data: t.TempDir(), srv: newServer(t), bus: &recorder{}}
	e.in = e.start(tweak...)
	return e
}

// start makes a fresh Installer over the env's data dir, as an agent
// restart would.
func (e *env) start(tweak ...func(*Config)) *Installer {
	e.t.Helper()
	cfg := Config{
		Device: testDevice, ServerURL: e.srv.URL, Username: testUser, Password: testPass,
		InstalledRoot: filepath.Join(e.data, "installed"),
		StagingDir:    filepath.Join(e.data, "staging"),
		SettingsRoot:  filepath.Join(e.data, "settings"),
		Bus:           e.bus,
		OnApplied: func(v int64, managed []string) {
			e.applied = append(e.applied, appliedCall{v, managed})
		},
	}
	for _, f := range tweak {
		f(&cfg)
	}
	in, err := New(cfg)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return in
}

func (e *env) apply(version int64, skills map[string]desired.Skill) error {
	e.t.Helper()
	if skills == nil {
		skills = map[string]desired.Skill{}
	}
	return e.in.Apply(context.Background(), desired.Doc{Version: version, Skills: skills})
}

func (e *env) installed(id string) string { return filepath.Join(e.data, "installed", id) }

// staged lists the staging directory.
func (e *env) staged() []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.data, "staging"))
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, d := range entries {
		names = append(names, d.Name())
	}
	return names
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
