package discovery

import (
	"fmt"
	"strings"
)

// Value is one top-level frontmatter value: a scalar or a list.
type Value struct {
	Text  string   // the scalar; "" for a list or a nested block
	Items []string // the list items, when List
	List  bool     // the value was a YAML list (block "- item" lines or inline [a, b])
	Line  int      // 1-based line of the key in the document
}

// Frontmatter maps lowercased top-level keys to their values.
type Frontmatter map[string]Value

// Text returns the scalar under key, "" when absent. A list is an error:
// every key but requirements is a single value.
func (f Frontmatter) Text(key string) (string, error) {
	v, ok := f[key]
	if !ok {
		return "", nil
	}
	if v.List {
		return "", fmt.Errorf("line %d: key %q must be a single value, not a list", v.Line, key)
	}
	return v.Text, nil
}

// FrontmatterError is a malformed frontmatter block; Line is 1-based in the
// whole document (the opening "---" is line 1).
type FrontmatterError struct {
	Line int
	Msg  string
}

func (e *FrontmatterError) Error() string {
	return fmt.Sprintf("frontmatter line %d: %s", e.Line, e.Msg)
}

// ParseFrontmatter splits an optional leading "---" ... "---" block off doc
// and parses it. seeds/002: _parse_frontmatter, the deliberately small YAML
// subset of SKILL_MANAGER §1:
//
//   - top-level "key: value" at column 0, keys lowercased; a value is plain,
//     'single' or "double" quoted (with escapes), and a " #" outside quotes
//     starts a comment;
//   - "key: >" (folded) and "key: |" (literal) block scalars over the
//     following indented lines, with chomping "-"/"+" and an indentation
//     digit accepted; clip behaves like strip (no final newline), since a
//     value is one string and a trailing newline means nothing here;
//   - lists: "- item" lines under an empty "key:" (indented or at column 0),
//     or inline "[a, 'b', c]";
//   - any other indented line is nested content and is ignored, so it cannot
//     clobber a top-level key; this includes indented lines after a plain
//     scalar (no multi-line plain scalars).
//
// A document that does not start with a "---" line has no frontmatter: the
// map is empty and the body is doc. A leading UTF-8 BOM and CRLF line ends
// are accepted. On success body is always a suffix of doc.
//
// Malformed input (an unclosed block, a line that is not "key: value", a
// duplicate key, an unterminated quote or list, a bad escape or block header)
// is a *FrontmatterError with its line number. It never panics.
func ParseFrontmatter(doc string) (Frontmatter, string, error) {
	first, rest, _ := cutLine(strings.TrimPrefix(doc, "\ufeff"))
	if trimEOL(first) != "---" {
		return Frontmatter{}, doc, nil
	}
	var lines []string
	for {
		if rest == "" {
			return nil, "", &FrontmatterError{Line: 1, Msg: "frontmatter opened with --- but never closed"}
		}
		var line string
		line, rest, _ = cutLine(rest)
		if trimEOL(line) == "---" {
			break
		}
		lines = append(lines, trimEOL(line))
	}
	p := fmParser{lines: lines, out: Frontmatter{}}
	if err := p.parse(); err != nil {
		return nil, "", err
	}
	return p.out, rest, nil
}

// cutLine returns the first line of s (without its "\n"), the rest after it,
// and whether s held anything at all.
func cutLine(s string) (line, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	line, rest, _ = strings.Cut(s, "\n")
	return line, rest, true
}

// trimEOL drops a trailing "\r" and trailing blanks.
func trimEOL(s string) string { return strings.TrimRight(s, " \t\r") }

// fmParser walks the lines between the fences; lines[i] is document line i+2.
type fmParser struct {
	lines []string
	i     int
	out   Frontmatter
}

func (p *fmParser) lineNo() int { return p.i + 2 }

func (p *fmParser) errf(format string, args ...any) error {
	return &FrontmatterError{Line: p.lineNo(), Msg: fmt.Sprintf(format, args...)}
}

func (p *fmParser) parse() error {
	for p.i < len(p.lines) {
		line := p.lines[p.i]
		switch {
		case strings.TrimSpace(line) == "", line[0] == '#', isIndented(line):
			p.i++ // blank, comment, or nested content of a scalar key: ignored
		case isListItem(line):
			return p.errf("list item outside a key")
		default:
			if err := p.parseKey(line); err != nil {
				return err
			}
		}
	}
	return nil
}

func isIndented(line string) bool { return line != "" && (line[0] == ' ' || line[0] == '\t') }

func isListItem(line string) bool {
	return line == "-" || strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "-\t")
}

// parseKey reads one "key: value" line and whatever belongs to it.
func (p *fmParser) parseKey(line string) error {
	sep := keySeparator(line)
	if sep < 0 {
		return p.errf("expected \"key: value\", got %q", clip(line))
	}
	key := strings.ToLower(strings.TrimSpace(line[:sep]))
	if key == "" {
		return p.errf("empty key")
	}
	if prev, dup := p.out[key]; dup {
		return p.errf("duplicate key %q (first on line %d)", key, prev.Line)
	}
	val := Value{Line: p.lineNo()}
	raw := strings.TrimSpace(line[sep+1:])
	var err error
	switch {
	case raw == "" || raw[0] == '#':
		val, err = p.nested(val)
	case raw[0] == '|' || raw[0] == '>':
		val.Text, err = p.blockScalar(raw)
	case raw[0] == '[':
		val.Items, err = parseFlowList(raw)
		val.List = true
		p.i++
	case raw[0] == '"' || raw[0] == '\'':
		val.Text, err = parseQuotedScalar(raw)
		p.i++
	default:
		val.Text = plainScalar(raw)
		p.i++
	}
	if err != nil {
		if _, ok := err.(*FrontmatterError); ok {
			return err
		}
		return &FrontmatterError{Line: val.Line, Msg: err.Error()}
	}
	p.out[key] = val
	return nil
}

// keySeparator is the index of the first ':' followed by a blank or the end
// of the line (so "url: http://x" splits after "url"), or -1.
func keySeparator(line string) int {
	for j := 0; j < len(line); j++ {
		if line[j] != ':' {
			continue
		}
		if j+1 == len(line) || line[j+1] == ' ' || line[j+1] == '\t' {
			return j
		}
	}
	return -1
}

// nested consumes the lines under an empty "key:": when its first line is
// a "- item", the "- item" lines at that indentation make a list; anything
// else (a nested mapping, deeper lines) is ignored.
func (p *fmParser) nested(val Value) (Value, error) {
	p.i++
	firstIndent, firstItem := -1, false
	for ; p.i < len(p.lines); p.i++ {
		line := p.lines[p.i]
		body := strings.TrimLeft(line, " \t")
		indent := len(line) - len(body)
		if body == "" || body[0] == '#' {
			continue
		}
		if indent == 0 && !isListItem(line) {
			break // the next top-level key
		}
		if firstIndent < 0 {
			firstIndent, firstItem = indent, isListItem(body)
		}
		if !firstItem || indent != firstIndent || !isListItem(body) {
			continue // nested mapping or deeper content: ignored
		}
		item, err := listItem(strings.TrimSpace(body[1:]))
		if err != nil {
			return val, p.errf("%v", err)
		}
		val.List = true
		val.Items = append(val.Items, item)
	}
	return val, nil
}

// listItem is one "- item" value: quoted or plain, comment stripped.
func listItem(raw string) (string, error) {
	if raw != "" && (raw[0] == '"' || raw[0] == '\'') {
		return parseQuotedScalar(raw)
	}
	return plainScalar(raw), nil
}

// plainScalar strips a trailing " #" comment from an unquoted value.
func plainScalar(raw string) string {
	if raw != "" && raw[0] == '#' {
		return ""
	}
	for j := 1; j < len(raw); j++ {
		if raw[j] == '#' && (raw[j-1] == ' ' || raw[j-1] == '\t') {
			return strings.TrimSpace(raw[:j])
		}
	}
	return strings.TrimSpace(raw)
}

// clip shortens a line for an error message.
func clip(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:40]) + "..."
	}
	return s
}
