package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/gateway/desired"
)

// Download retries within one pass: a dropped connection resumes where it
// stopped, up to maxAttempts requests, backing off retryDelay × attempt.
const (
	maxAttempts = 4
	retryDelay  = 200 * time.Millisecond
	partSuffix  = ".part"
)

// urlError marks a URL the installer cannot use (ErrorURL in events).
type urlError struct{ err error }

func (e *urlError) Error() string { return e.err.Error() }
func (e *urlError) Unwrap() error { return e.err }

// retryable marks a download failure worth another request: the network,
// the server's 5xx, a short body. The partial file is kept for resuming.
type retryable struct{ err error }

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// partPath is where the artifact with sha is downloaded. Downloads are
// content-addressed, so a partial file survives a restart (CleanStaging
// keeps it) and the next attempt resumes it.
func (in *Installer) partPath(sha string) string {
	return filepath.Join(in.cfg.StagingDir, sha+partSuffix)
}

// download fetches s's artifact into staging, resuming a partial file with
// a Range request, and verifies its size and sha256. It returns the
// verified file's path. A file that fails verification, or a server that
// sends more than the declared size, deletes the partial file.
func (in *Installer) download(ctx context.Context, s desired.Skill) (string, error) {
	if s.Size > in.cfg.MaxDownload {
		return "", fmt.Errorf("download: artifact is %d bytes, over the %d-byte limit", s.Size, in.cfg.MaxDownload)
	}
	u, auth, err := in.resolve(s.URL)
	if err != nil {
		return "", err
	}
	part := in.partPath(s.SHA256)
	for attempt := 1; ; attempt++ {
		err = in.fetch(ctx, u, auth, part, s.Size)
		var r *retryable
		if err == nil || !errors.As(err, &r) || attempt == maxAttempts || ctx.Err() != nil {
			break
		}
		in.log.Warn("download interrupted; resuming", "url", u, "attempt", attempt, "err", err)
		if err := sleep(ctx, retryDelay*time.Duration(attempt)); err != nil {
			return "", fmt.Errorf("download %s: %w", u, err)
		}
	}
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u, err)
	}
	if err := verify(part, s); err != nil {
		os.Remove(part)
		return "", fmt.Errorf("download %s: %w", u, err)
	}
	return part, nil
}

// resolve turns a desired URL into an absolute one; auth says whether the
// device's credentials may go with it (only to the gateway itself).
func (in *Installer) resolve(raw string) (string, bool, error) {
	if strings.HasPrefix(raw, "/") {
		if in.cfg.ServerURL == "" {
			return "", false, &urlError{fmt.Errorf("relative artifact url %s, but no gateway url is configured", raw)}
		}
		raw = strings.TrimSuffix(in.cfg.ServerURL, "/") + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, &urlError{fmt.Errorf("artifact url %q is not an http(s) url", raw)}
	}
	base, err := url.Parse(in.cfg.ServerURL)
	auth := err == nil && in.cfg.Username != "" && base.Scheme == u.Scheme && base.Host == u.Host
	return u.String(), auth, nil
}

// fetch makes one request for the rest of the artifact and appends it to
// part.
func (in *Installer) fetch(ctx context.Context, u string, auth bool, part string, size int64) error {
	have, err := partSize(part, size)
	if err != nil || have == size {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if auth {
		req.SetBasicAuth(in.cfg.Username, in.cfg.Password)
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := in.cfg.Client.Do(req)
	if err != nil {
		return &retryable{err}
	}
	defer resp.Body.Close()
	offset, err := responseOffset(resp, have, size)
	if err != nil {
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable || errors.Is(err, errRestart) {
			os.Remove(part) // start over on the next attempt
			return &retryable{err}
		}
		return err
	}
	return appendBody(part, offset, resp.Body, size)
}

// errRestart: the server's range does not fit the partial file.
var errRestart = errors.New("server range does not continue the partial download")

// responseOffset checks the status and returns where the body starts in
// the artifact: 0 for a full response, have for a partial one.
func responseOffset(resp *http.Response, have, size int64) (int64, error) {
	switch {
	case resp.StatusCode == http.StatusOK:
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			return 0, fmt.Errorf("%w: server sends %d bytes, the desired size is %d", ErrIntegrity, resp.ContentLength, size)
		}
		return 0, nil
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have || (total >= 0 && total != size) {
			return 0, fmt.Errorf("%w: Content-Range %q", errRestart, resp.Header.Get("Content-Range"))
		}
		return have, nil
	case resp.StatusCode >= 500:
		return 0, &retryable{fmt.Errorf("server: %s", resp.Status)}
	default:
		return 0, fmt.Errorf("server: %s", resp.Status)
	}
}

// parseContentRange reads "bytes START-END/TOTAL"; total is -1 for "*".
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	first, _, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if tot == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(tot, 10, 64)
	return start, total, err == nil
}

// appendBody writes body at offset of part, at most size-offset bytes; one
// byte more means the artifact is bigger than declared.
func appendBody(part string, offset int64, body io.Reader, size int64) error {
	flags := os.O_WRONLY | os.O_CREATE
	if offset == 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(part, flags, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	n, copyErr := io.Copy(f, io.LimitReader(body, size-offset+1))
	if err := f.Sync(); err != nil && copyErr == nil {
		copyErr = err
	}
	if err := f.Close(); err != nil && copyErr == nil {
		copyErr = err
	}
	switch {
	case offset+n > size:
		os.Remove(part)
		return fmt.Errorf("%w: server sent more than the desired %d bytes", ErrIntegrity, size)
	case copyErr != nil:
		return &retryable{copyErr}
	case offset+n < size:
		return &retryable{fmt.Errorf("body ended after %d of %d bytes", offset+n, size)}
	}
	return nil
}

// partSize returns how much of the artifact is already downloaded; a
// partial file larger than the artifact is removed.
func partSize(part string, size int64) (int64, error) {
	fi, err := os.Stat(part)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	case fi.Size() > size:
		return 0, os.Remove(part)
	}
	return fi.Size(), nil
}

// verify checks the downloaded file against the desired size and sha256.
func verify(path string, s desired.Skill) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != s.Size {
		return fmt.Errorf("%w: %d bytes, want %d", ErrIntegrity, n, s.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Errorf("%w: sha256 %s, want %s", ErrIntegrity, got, s.SHA256)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
