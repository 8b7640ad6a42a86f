package connectivity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrNoCheckURLs says why the internet is reported down when no check URL
// is configured (connectivity.check_urls). SKILL_MANAGER §5: no URL is
// built in.
var ErrNoCheckURLs = errors.New("no connectivity check URLs configured (connectivity.check_urls)")

// CheckInternet reports whether any of urls answers an HTTP GET with a 2xx
// or 3xx status. It tries them in order and stops at the first success.
// With no URL it returns false and ErrNoCheckURLs; when every URL fails it
// returns false and the joined reasons. A nil client means
// http.DefaultClient; bound the check with ctx or client.Timeout.
//
// The skill manager uses it as its startup fallback when PHAL does not
// answer ovos.PHAL.internet_check (seeds/000: "falls back to a direct HTTP
// check").
func CheckInternet(ctx context.Context, urls []string, client *http.Client) (bool, error) {
	if len(urls) == 0 {
		return false, ErrNoCheckURLs
	}
	if client == nil {
		client = http.DefaultClient
	}
	var errs []error
	for _, u := range urls {
		err := probe(ctx, client, u)
		if err == nil {
			return true, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return false, fmt.Errorf("internet check: %w", errors.Join(errs...))
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("check %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("check %s: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("check %s: status %d", url, resp.StatusCode)
	}
	return nil
}
