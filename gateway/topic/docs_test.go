package topic_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// docsPath is the public description of the topic tree this package owns.
var docsPath = filepath.Join("..", "..", "docs", "topics.md")

// The ids substituted for the placeholders of docs/topics.md; the device id
// needs Home Assistant escaping on purpose.
const (
	docDevice = "pi.kitchen_1"
	docSkill  = "hello.chorus"
	docType   = "speak"
)

// mdDoc is docs/topics.md cut into what the test checks.
type mdDoc struct {
	blocks map[string][]string // fence language -> code blocks
	tables []mdTable
}

type mdTable struct {
	line   int // of the header
	header []string
	rows   [][]string
}

func readDoc(t *testing.T) mdDoc {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	return parseMarkdown(string(b))
}

// parseMarkdown collects fenced code blocks by language and pipe tables
// (header, separator, rows) outside them.
func parseMarkdown(s string) mdDoc {
	doc := mdDoc{blocks: map[string][]string{}}
	var lang string
	var block []string
	inBlock := false
	var table *mdTable
	for i, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case inBlock && trimmed == "```":
			doc.blocks[lang] = append(doc.blocks[lang], strings.Join(block, "\n"))
			inBlock, block = false, nil
		case inBlock:
			block = append(block, line)
		case strings.HasPrefix(trimmed, "```"):
			inBlock, lang = true, strings.TrimPrefix(trimmed, "```")
			table = nil
		case strings.HasPrefix(trimmed, "|"):
			cells := splitRow(trimmed)
			switch {
			case table == nil:
				doc.tables = append(doc.tables, mdTable{line: i + 1, header: cells})
				table = &doc.tables[len(doc.tables)-1]
			case strings.Trim(trimmed, "|-: ") == "":
				// the separator row
			default:
				table.rows = append(table.rows, cells)
			}
		default:
			table = nil
		}
	}
	return doc
}

func splitRow(row string) []string {
	cells := strings.Split(strings.Trim(row, "|"), "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

// codeSpans returns the `...` spans of a table cell.
func codeSpans(cell string) []string {
	parts := strings.Split(cell, "`")
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

func column(t mdTable, name string) int {
	for i, h := range t.header {
		if strings.EqualFold(h, name) {
			return i
		}
	}
	return -1
}

func substitute(pattern, device string) string {
	return strings.NewReplacer("<device>", device, "<skill>", docSkill, "<type>", docType).Replace(pattern)
}

func TestDocsJSONExamplesParse(t *testing.T) {
	blocks := readDoc(t).blocks["json"]
	if len(blocks) < 8 {
		t.Fatalf("found %d json blocks in %s; the parser or the doc is broken", len(blocks), docsPath)
	}
	for i, b := range blocks {
		var v any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Errorf("json block %d does not parse: %v\n%s", i+1, err, b)
		}
	}
}

// TestDocsTopicTable checks every row of every table whose first column is
// "topic": the pattern, with example ids, is a topic this package parses
// (or builds, for Home Assistant's), with the retained flag and QoS the
// table states; and every kind of the tree has a row.
func TestDocsTopicTable(t *testing.T) {
	seen := map[topic.Kind]bool{}
	ha := map[string]bool{}
	for _, tbl := range readDoc(t).tables {
		if !strings.EqualFold(tbl.header[0], "topic") {
			continue
		}
		retained, qos := column(tbl, "retained"), column(tbl, "QoS")
		if retained < 0 || qos < 0 {
			t.Errorf("line %d: a topic table needs retained and QoS columns, has %q", tbl.line, tbl.header)
			continue
		}
		for _, row := range tbl.rows {
			spans := codeSpans(row[0])
			if len(spans) != 1 {
				t.Errorf("line %d: row %q: want one `topic` in the first cell", tbl.line, row[0])
				continue
			}
			pattern := spans[0]
			if strings.HasPrefix(pattern, topic.DefaultHAPrefix+"/") {
				checkHATopic(t, pattern, row[retained])
				ha[pattern] = true
				continue
			}
			k := checkTreeTopic(t, pattern, row[retained], row[qos])
			seen[k] = true
		}
	}
	for k := topic.KindAvailability; k <= topic.KindGatewayFleet; k++ {
		if !seen[k] {
			t.Errorf("no table row documents the %s topic", k)
		}
	}
	for _, p := range []string{"homeassistant/device/chorus_<device>/config", "homeassistant/device/chorus_gateway/config", "homeassistant/status"} {
		if !ha[p] {
			t.Errorf("no table row documents %s", p)
		}
	}
}

func checkTreeTopic(t *testing.T, pattern, retained, qos string) topic.Kind {
	t.Helper()
	s := substitute(pattern, docDevice)
	got, err := topic.Parse(s)
	if err != nil {
		t.Errorf("%s: %v", pattern, err)
		return topic.KindInvalid
	}
	if want := got.Kind.Retained(); (retained == "yes") != want || (retained != "yes" && retained != "no") {
		t.Errorf("%s: retained column %q, but %s topics are retained=%v", pattern, retained, got.Kind, want)
	}
	if qos != "1" {
		t.Errorf("%s: QoS column %q, want 1 (every Chorus client publishes at QoS 1)", pattern, qos)
	}
	return got.Kind
}

func checkHATopic(t *testing.T, pattern, retained string) {
	t.Helper()
	var want string
	var err error
	wantRetained := "yes"
	switch {
	case strings.Contains(pattern, "<device>"):
		want, err = topic.HADiscovery(topic.DefaultHAPrefix, docDevice)
	case strings.HasSuffix(pattern, "/config"):
		want, err = topic.HAGatewayDiscovery(topic.DefaultHAPrefix)
	default:
		want, err = topic.HAStatus(topic.DefaultHAPrefix)
		wantRetained = "no" // Home Assistant's birth, not retained by default
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := substitute(pattern, topic.HAEscape(docDevice)); got != want {
		t.Errorf("%s gives %s, want %s", pattern, got, want)
	}
	if retained != wantRetained {
		t.Errorf("%s: retained column %q, want %q", pattern, retained, wantRetained)
	}
}

// TestDocsBusTypes checks the message types in the first column of every
// table whose first column is "type": each is one topic level under a
// device's bus.
func TestDocsBusTypes(t *testing.T) {
	n := 0
	for _, tbl := range readDoc(t).tables {
		if !strings.EqualFold(tbl.header[0], "type") {
			continue
		}
		for _, row := range tbl.rows {
			for _, typ := range codeSpans(row[0]) {
				n++
				s, err := topic.Bus(docDevice, typ)
				if err != nil {
					t.Errorf("line %d: bus type %q: %v", tbl.line, typ, err)
					continue
				}
				if got, err := topic.Parse(s); err != nil || got.MsgType != typ {
					t.Errorf("line %d: %s parses as %+v, %v", tbl.line, s, got, err)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d bus types in %s; the parser or the doc is broken", n, docsPath)
	}
}

// TestDocsTextExamples checks the topics of the `mosquitto_sub -v` sample.
func TestDocsTextExamples(t *testing.T) {
	n := 0
	for _, b := range readDoc(t).blocks["text"] {
		for _, line := range strings.Split(b, "\n") {
			name, _, _ := strings.Cut(line, " ")
			if !strings.HasPrefix(name, topic.Root+"/") {
				continue
			}
			n++
			if _, err := topic.Parse(name); err != nil {
				t.Errorf("sample line %q: %v", line, err)
			}
		}
	}
	if n == 0 {
		t.Error("no sample topics found")
	}
}
