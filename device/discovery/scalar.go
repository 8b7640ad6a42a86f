package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The scalar forms of the frontmatter subset (see ParseFrontmatter). Each
// returns a plain error; the caller attaches the line number.

// parseQuotedScalar reads a quoted value that starts raw and must end on the
// same line; after the closing quote only blanks and a "#" comment may follow.
func parseQuotedScalar(raw string) (string, error) {
	s, n, err := readQuoted(raw)
	if err != nil {
		return "", err
	}
	if rest := strings.TrimLeft(raw[n:], " \t"); rest != "" && (rest[0] != '#' || rest == raw[n:]) {
		return "", fmt.Errorf("unexpected text after quoted value: %q", clip(rest))
	}
	return s, nil
}

// readQuoted decodes the quoted string at the start of raw and returns it
// with the number of bytes consumed (both quotes included).
func readQuoted(raw string) (string, int, error) {
	if raw[0] == '\'' {
		return readSingle(raw)
	}
	return readDouble(raw)
}

// readSingle decodes a 'single quoted' string, where a doubled quote stands
// for one quote.
func readSingle(raw string) (string, int, error) {
	var b strings.Builder
	for j := 1; j < len(raw); j++ {
		if raw[j] != '\'' {
			b.WriteByte(raw[j])
			continue
		}
		if j+1 < len(raw) && raw[j+1] == '\'' {
			b.WriteByte('\'')
			j++
			continue
		}
		return b.String(), j + 1, nil
	}
	return "", 0, errors.New("unterminated single-quoted value (multi-line quotes are not supported)")
}

// readDouble decodes a "double quoted" string with YAML's common escapes.
func readDouble(raw string) (string, int, error) {
	var b strings.Builder
	for j := 1; j < len(raw); j++ {
		switch raw[j] {
		case '"':
			return b.String(), j + 1, nil
		case '\\':
			n, err := writeEscape(&b, raw[j+1:])
			if err != nil {
				return "", 0, err
			}
			j += n
		default:
			b.WriteByte(raw[j])
		}
	}
	return "", 0, errors.New("unterminated double-quoted value (multi-line quotes are not supported)")
}

var simpleEscapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v",
	'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\",
	'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// writeEscape decodes the escape after a backslash (s starts after it) and
// returns how many bytes of s it used.
func writeEscape(b *strings.Builder, s string) (int, error) {
	if s == "" {
		return 0, errors.New("unterminated double-quoted value (multi-line quotes are not supported)")
	}
	if r, ok := simpleEscapes[s[0]]; ok {
		b.WriteString(r)
		return 1, nil
	}
	width := 0
	switch s[0] {
	case 'x':
		width = 2
	case 'u':
		width = 4
	case 'U':
		width = 8
	}
	if width == 0 || len(s) < 1+width {
		return 0, fmt.Errorf("invalid escape \\%s in double-quoted value", firstRune(s))
	}
	code, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || code > utf8.MaxRune {
		return 0, fmt.Errorf("invalid escape \\%s in double-quoted value", s[:1+width])
	}
	b.WriteRune(rune(code))
	return 1 + width, nil
}

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// parseFlowList reads an inline "[a, 'b', c]" list; items are plain or
// quoted, nested lists and mappings are refused, a comment may follow.
func parseFlowList(raw string) ([]string, error) {
	items := []string{}
	j := 1
	for {
		j = skipBlanks(raw, j)
		if j >= len(raw) {
			return nil, errors.New("unterminated inline list (missing ])")
		}
		if raw[j] == ']' {
			return items, flowTail(raw[j+1:])
		}
		item, n, err := flowItem(raw[j:])
		if err != nil {
			return nil, err
		}
		items = append(items, item)
		j = skipBlanks(raw, j+n)
		if j < len(raw) && raw[j] == ',' {
			j++
		} else if j >= len(raw) || raw[j] != ']' {
			return nil, errors.New("unterminated inline list (missing , or ])")
		}
	}
}

// flowItem reads one list item and returns it with the bytes consumed.
func flowItem(s string) (string, int, error) {
	switch s[0] {
	case '"', '\'':
		return readQuoted(s)
	case '[', '{':
		return "", 0, errors.New("nested lists and mappings are not supported in an inline list")
	}
	end := strings.IndexAny(s, ",]")
	if end < 0 {
		return "", 0, errors.New("unterminated inline list (missing ])")
	}
	if strings.ContainsAny(s[:end], "[{") {
		return "", 0, errors.New("nested lists and mappings are not supported in an inline list")
	}
	return strings.TrimSpace(s[:end]), end, nil
}

// flowTail checks what follows the closing "]": blanks and a comment only.
func flowTail(rest string) error {
	t := strings.TrimLeft(rest, " \t")
	if t == "" || (t[0] == '#' && t != rest) {
		return nil
	}
	return fmt.Errorf("unexpected text after inline list: %q", clip(t))
}

func skipBlanks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j
}

// blockHeader is a parsed "|", ">-", "|+2" ... header.
type blockHeader struct {
	folded bool
	chomp  byte // 0 (clip), '-' (strip) or '+' (keep)
	indent int  // explicit indentation, 0 when absent
}

// parseBlockHeader reads the header of a block scalar, comment allowed.
func parseBlockHeader(raw string) (blockHeader, error) {
	h := blockHeader{folded: raw[0] == '>'}
	j := 1
indicators:
	for ; j < len(raw) && j <= 2; j++ {
		switch c := raw[j]; {
		case (c == '-' || c == '+') && h.chomp == 0:
			h.chomp = c
		case c >= '1' && c <= '9' && h.indent == 0:
			h.indent = int(c - '0')
		default:
			break indicators
		}
	}
	rest := raw[j:]
	if t := strings.TrimLeft(rest, " \t"); t != "" && (t[0] != '#' || t == rest) {
		return h, fmt.Errorf("invalid block scalar header %q", clip(raw))
	}
	return h, nil
}

// blockScalar consumes the indented lines after a "|" or ">" header.
func (p *fmParser) blockScalar(raw string) (string, error) {
	h, err := parseBlockHeader(raw)
	if err != nil {
		return "", err
	}
	p.i++
	var block []string
	for ; p.i < len(p.lines); p.i++ {
		line := p.lines[p.i]
		if strings.TrimSpace(line) != "" && !isIndented(line) {
			break
		}
		block = append(block, line)
	}
	return joinBlock(dedent(block, h.indent), h), nil
}

// dedent removes the block's indentation: the explicit one, else the
// smallest indentation of its non-blank lines. Blank lines become "".
func dedent(block []string, explicit int) []string {
	pad := explicit
	if pad == 0 {
		pad = -1
		for _, ln := range block {
			if strings.TrimSpace(ln) == "" {
				continue
			}
			if n := len(ln) - len(strings.TrimLeft(ln, " \t")); pad < 0 || n < pad {
				pad = n
			}
		}
	}
	out := make([]string, len(block))
	for i, ln := range block {
		if strings.TrimSpace(ln) == "" {
			continue
		}
		n := min(pad, len(ln)-len(strings.TrimLeft(ln, " \t")))
		out[i] = ln[n:]
	}
	return out
}

// joinBlock applies folding and chomping to dedented lines.
func joinBlock(lines []string, h blockHeader) string {
	trailing := 0
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
		trailing++
	}
	var s string
	if h.folded {
		s = fold(lines)
	} else {
		s = strings.Join(lines, "\n")
	}
	if h.chomp == '+' && len(lines) > 0 {
		s += "\n" + strings.Repeat("\n", trailing)
	}
	return s
}

// fold joins consecutive non-blank lines with a space; each blank line
// between them becomes one "\n" (YAML folding, more-indented lines included).
func fold(lines []string) string {
	var b strings.Builder
	prevText := false
	for _, ln := range lines {
		if ln == "" {
			b.WriteByte('\n')
			prevText = false
			continue
		}
		if prevText {
			b.WriteByte(' ')
		}
		b.WriteString(ln)
		prevText = true
	}
	return b.String()
}
