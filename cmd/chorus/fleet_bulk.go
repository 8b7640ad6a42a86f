//go:build !chorus_agent

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet/api"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
)

// bulkOptions are the flags of `device add --from`.
type bulkOptions struct {
	from, credDir string
	tags          []string // added to every device
}

// bulkLine is one device to enrol, or why its line could not be read.
type bulkLine struct {
	line int
	id   string
	tags []string
	err  error
}

// bulkResult is the report of one line.
type bulkResult struct {
	Line            int    `json:"line"`
	ID              string `json:"id,omitempty"`
	Status          string `json:"status"` // added or failed
	CredentialsFile string `json:"credentials_file,omitempty"`
	Error           string `json:"error,omitempty"`
}

// bulkAdd enrols every device of the file, one request each, reporting per
// line. A bad line or a refused device is reported and the rest go on; an
// unreachable gateway or a wrong token stops it, since every later line
// would fail the same way.
func (a *app) bulkAdd(ctx context.Context, c *fleetclient.Client, f *fleetFlags, o bulkOptions) error {
	lines, err := readBulkFile(o.from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.credDir, 0o700); err != nil {
		return fmt.Errorf("--credentials-dir: %w", err)
	}
	var results []bulkResult
	var stop error
	for _, l := range lines {
		r, err := a.bulkAddOne(ctx, c, o, l)
		if fatalForBulk(err) {
			stop = err
			break
		}
		results = append(results, r)
	}
	if err := a.printBulk(f, results); err != nil {
		return err
	}
	if stop != nil {
		return stop
	}
	failed := 0
	for _, r := range results {
		if r.Status != "added" {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d devices not enrolled", failed, len(results))}
	}
	return nil
}

func (a *app) bulkAddOne(ctx context.Context, c *fleetclient.Client, o bulkOptions, l bulkLine) (bulkResult, error) {
	r := bulkResult{Line: l.line, ID: l.id, Status: "failed"}
	if l.err != nil {
		r.Error = l.err.Error()
		return r, nil
	}
	enr, err := c.AddDevice(ctx, l.id, cleanTags(append(l.tags, o.tags...)))
	if err != nil {
		r.Error = err.Error()
		return r, err
	}
	path := fleetCredPath(o.credDir, enr.Device.ID)
	if err := configs.WriteAgentCredentials(path, enr.Credentials); err != nil {
		r.Error = fmt.Sprintf("enrolled, but its credentials could not be saved: %v; get new ones with `chorus fleet device rotate %s`", err, l.id)
		return r, nil
	}
	r.Status, r.CredentialsFile = "added", path
	return r, nil
}

func fatalForBulk(err error) bool {
	var unreachable *fleetclient.UnreachableError
	return errors.As(err, &unreachable) || fleetclient.IsCode(err, api.CodeUnauthorized) ||
		errors.Is(err, context.Canceled)
}

func (a *app) printBulk(f *fleetFlags, results []bulkResult) error {
	if f.json() {
		return fleetJSON(a.stdout, map[string]any{"results": fleetList(results)})
	}
	t := newFleetTable(a.stdout, "LINE", "ID", "RESULT", "DETAIL")
	for _, r := range results {
		detail := r.CredentialsFile
		if r.Error != "" {
			detail = r.Error
		}
		t.row(strconv.Itoa(r.Line), r.ID, r.Status, detail)
	}
	return t.flush()
}

// maxBulkFile caps the enrolment file; 10,000 devices need a few hundred KiB.
const maxBulkFile = 16 << 20

func readBulkFile(path string) ([]bulkLine, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxBulkFile+1))
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	if len(b) > maxBulkFile {
		return nil, fmt.Errorf("--from %s: over %d bytes", path, maxBulkFile)
	}
	lines := parseBulk(b)
	if len(lines) == 0 {
		return nil, fmt.Errorf("--from %s: no devices", path)
	}
	return lines, nil
}

// parseBulk reads CSV lines (`id,tag1;tag2`, an optional `id,...` header)
// or JSON lines (`{"id": "pi-1", "tags": ["kitchen"]}`), which may be
// mixed. Blank lines and # comments are skipped; a line that names a
// device already listed is an error, so the report never hides one.
func parseBulk(b []byte) []bulkLine {
	var out []bulkLine
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxBulkFile)
	first := true
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		header := first && isBulkHeader(text)
		if first = false; header {
			continue
		}
		l := parseBulkLine(text)
		l.line = n
		if prev, dup := seen[l.id]; l.err == nil && dup {
			l.err = fmt.Errorf("device %s is already on line %d", l.id, prev)
		} else if l.err == nil {
			seen[l.id] = n
		}
		out = append(out, l)
	}
	return out
}

func isBulkHeader(text string) bool {
	id, _, _ := strings.Cut(text, ",")
	return strings.EqualFold(strings.TrimSpace(id), "id")
}

func parseBulkLine(text string) bulkLine {
	if strings.HasPrefix(text, "{") {
		return parseBulkJSON(text)
	}
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	rec, err := r.Read()
	switch {
	case err != nil:
		return bulkLine{err: fmt.Errorf("not CSV: %v", err)}
	case len(rec) > 2:
		return bulkLine{err: fmt.Errorf("%d fields, want id,tag1;tag2", len(rec))}
	}
	l := bulkLine{id: strings.TrimSpace(rec[0])}
	if len(rec) == 2 {
		l.tags = cleanTags(strings.Split(rec[1], ";"))
	}
	if l.id == "" {
		l.err = errors.New("no device id")
	}
	return l
}

func parseBulkJSON(text string) bulkLine {
	var v struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields() // a misspelt "tag" must not drop the tags silently
	if err := dec.Decode(&v); err != nil {
		return bulkLine{err: fmt.Errorf("not a JSON object of id and tags: %v", err)}
	}
	if dec.More() {
		return bulkLine{err: errors.New("not one JSON object: trailing data")}
	}
	l := bulkLine{id: strings.TrimSpace(v.ID), tags: cleanTags(v.Tags)}
	if l.id == "" {
		l.err = errors.New("no device id")
	}
	return l
}
