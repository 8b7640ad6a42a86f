package discovery

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// doc builds a SKILL.md: the frontmatter lines between fences, then body.
func doc(body string, lines ...string) string {
	return "---\n" + strings.Join(lines, "\n") + "\n---\n" + body
}

func text(s string) Value { return Value{Text: s} }
func list(items ...string) Value {
	if items == nil {
		items = []string{}
	}
	return Value{List: true, Items: items}
}

func TestParseFrontmatter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]Value // Line is not compared
		body string
	}{
		{"no frontmatter", "# Title\n\nBody.\n", map[string]Value{}, "# Title\n\nBody.\n"},
		{"dashes not alone on first line", "--- x\nname: a\n---\n", map[string]Value{}, "--- x\nname: a\n---\n"},
		{"empty block", "---\n---\nBody", map[string]Value{}, "Body"},
		{"plain keys, key lowercased", doc("B", "Name: hello", "origin: personal"),
			map[string]Value{"name": text("hello"), "origin": text("personal")}, "B"},
		{"double quoted keeps #", doc("", `description: "a # not a comment"`),
			map[string]Value{"description": text("a # not a comment")}, ""},
		{"single quoted, doubled quote", doc("", `description: 'it''s # here'  # comment`),
			map[string]Value{"description": text("it's # here")}, ""},
		{"double quoted escapes", doc("", `name: "caf\u00e9\t\"x\"\\"`),
			map[string]Value{"name": text("café\t\"x\"\\")}, ""},
		{"inline comment", doc("", "name: hello   # the id", "exec: run.sh\t# tab comment"),
			map[string]Value{"name": text("hello"), "exec": text("run.sh")}, ""},
		{"hash without blank is text", doc("", "origin: http://x/#frag"),
			map[string]Value{"origin": text("http://x/#frag")}, ""},
		{"comment-only value is empty", doc("", "version: # none yet"),
			map[string]Value{"version": text("")}, ""},
		{"comment and blank lines", doc("", "# a comment", "", "name: a", "   ", "# another"),
			map[string]Value{"name": text("a")}, ""},
		{"folded block", doc("", "description: >", "  one", "  two", "", "  three", "name: x"),
			map[string]Value{"description": text("one two\nthree"), "name": text("x")}, ""},
		{"literal block", doc("", "description: |", "  one", "    two", "  three", "", "name: x"),
			map[string]Value{"description": text("one\n  two\nthree"), "name": text("x")}, ""},
		{"literal keep chomping", doc("", "description: |+", "  one", "", "name: x"),
			map[string]Value{"description": text("one\n\n"), "name": text("x")}, ""},
		{"folded strip chomping and header comment", doc("", "description: >- # folded", "  a", "  b"),
			map[string]Value{"description": text("a b")}, ""},
		{"explicit indentation", doc("", "description: |2", "    deep", "  base"),
			map[string]Value{"description": text("  deep\nbase")}, ""},
		{"tab-indented block", doc("", "description: |", "\tone", "\ttwo"),
			map[string]Value{"description": text("one\ntwo")}, ""},
		{"empty block scalar", doc("", "description: >", "name: x"),
			map[string]Value{"description": text(""), "name": text("x")}, ""},
		{"block list", doc("", "requirements:", "  - network", "  - 'gui'  # screen", "  # comment", "name: x"),
			map[string]Value{"requirements": list("network", "gui"), "name": text("x")}, ""},
		{"block list at column 0", doc("", "requirements:", "- internet", "- gpu"),
			map[string]Value{"requirements": list("internet", "gpu")}, ""},
		{"inline list", doc("", `requirements: [network, "g,u,i", 'x y' ]  # c`),
			map[string]Value{"requirements": list("network", "g,u,i", "x y")}, ""},
		{"empty inline list", doc("", "requirements: []"),
			map[string]Value{"requirements": list()}, ""},
		{"nested mapping ignored, cannot clobber", doc("", "metadata:", "  name: evil", "  third_party:", "    - name: x", "name: good"),
			map[string]Value{"metadata": text(""), "name": text("good")}, ""},
		{"list nested in item ignored", doc("", "requirements:", "  - gui", "    - deeper"),
			map[string]Value{"requirements": list("gui")}, ""},
		{"indented continuation of scalar ignored", doc("", "description: first", "  second", "name: x"),
			map[string]Value{"description": text("first"), "name": text("x")}, ""},
		{"flow mapping kept as plain text", doc("", "meta: {a: 1}"),
			map[string]Value{"meta": text("{a: 1}")}, ""},
		{"CRLF and BOM", "\ufeff---\r\nname: crlf\r\ndescription: \"q\"\r\n---\r\nBody\r\n",
			map[string]Value{"name": text("crlf"), "description": text("q")}, "Body\r\n"},
		{"closing fence with trailing blanks", "---\nname: a\n---  \nrest", map[string]Value{"name": text("a")}, "rest"},
		{"body keeps later fences", doc("x\n---\ny: z\n", "name: a"), map[string]Value{"name": text("a")}, "x\n---\ny: z\n"},
		{"colon inside value", doc("", "origin: a: b"), map[string]Value{"origin": text("a: b")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body, err := ParseFrontmatter(tt.in)
			if err != nil {
				t.Fatalf("ParseFrontmatter: %v", err)
			}
			for k, v := range got {
				v.Line = 0
				got[k] = v
			}
			if !reflect.DeepEqual(map[string]Value(got), tt.want) {
				t.Errorf("map:\n got %#v\nwant %#v", got, tt.want)
			}
			if body != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
		})
	}
}

func TestParseFrontmatterLineNumbers(t *testing.T) {
	got, _, err := ParseFrontmatter(doc("", "# c", "name: a", "", "requirements:", "  - x"))
	if err != nil {
		t.Fatal(err)
	}
	if got["name"].Line != 3 || got["requirements"].Line != 5 {
		t.Errorf("lines = name %d, requirements %d; want 3, 5", got["name"].Line, got["requirements"].Line)
	}
}

func TestParseFrontmatterErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		msg  string
	}{
		{"unclosed", "---\nname: a\n", 1, "never closed"},
		{"fence only", "---", 1, "never closed"},
		{"fence and newline only", "---\n", 1, "never closed"},
		{"not key value", doc("", "name: a", "just words"), 3, `expected "key: value"`},
		{"colon without blank", doc("", "name:a"), 2, `expected "key: value"`},
		{"empty key", doc("", ": v"), 2, "empty key"},
		{"duplicate key", doc("", "name: a", "Name: b"), 3, `duplicate key "name" (first on line 2)`},
		{"unterminated double quote", doc("", `name: "abc`), 2, "unterminated double-quoted"},
		{"unterminated single quote", doc("", "x: 1", "name: 'abc"), 3, "unterminated single-quoted"},
		{"text after quote", doc("", `name: "a" b`), 2, "unexpected text after quoted value"},
		{"comment glued to quote", doc("", `name: "a"#b`), 2, "unexpected text after quoted value"},
		{"bad escape", doc("", `name: "a\qb"`), 2, `invalid escape \q`},
		{"short unicode escape", doc("", `name: "\u12"`), 2, "invalid escape"},
		{"unterminated list", doc("", "requirements: [a, b"), 2, "unterminated inline list"},
		{"text after list", doc("", "requirements: [a] b"), 2, "unexpected text after inline list"},
		{"nested inline list", doc("", "requirements: [a, [b]]"), 2, "nested lists"},
		{"list garbage between items", doc("", `requirements: ["a" "b"]`), 2, "unterminated inline list"},
		{"bad block header", doc("", "description: |x"), 2, "invalid block scalar header"},
		{"list item outside key", doc("", "name: a", "- b"), 3, "list item outside a key"},
		{"bad quoted list item", doc("", "requirements:", "  - 'a", "name: b"), 3, "unterminated single-quoted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseFrontmatter(tt.in)
			var fe *FrontmatterError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FrontmatterError", err)
			}
			if fe.Line != tt.line || !strings.Contains(fe.Error(), tt.msg) {
				t.Errorf("err = %q (line %d), want line %d containing %q", fe, fe.Line, tt.line, tt.msg)
			}
		})
	}
}

func TestFrontmatterTextRefusesList(t *testing.T) {
	fm, _, err := ParseFrontmatter(doc("", "name: [a, b]"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Text("name"); err == nil || !strings.Contains(err.Error(), "not a list") {
		t.Errorf("Text(name) err = %v, want a 'not a list' error", err)
	}
	if v, err := fm.Text("absent"); v != "" || err != nil {
		t.Errorf("Text(absent) = %q, %v; want empty, nil", v, err)
	}
}

// FuzzParseFrontmatter: never panics; on success the body is a suffix of
// the input; on failure the error is a *FrontmatterError inside the input.
func FuzzParseFrontmatter(f *testing.F) {
	for _, s := range []string{
		"", "---", "---\n---\n", doc("body", "name: a", "description: >", "  x", "requirements: [a, 'b']"),
		doc("", "requirements:", "- a", "  - b", "x: |+2", "   y"), doc("", `n: "\U0001F600\x41"`),
		"\ufeff---\r\nname: 'it''s'\r\n---\r\n", doc("", "a: [", "b: \"\\"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fm, body, err := ParseFrontmatter(in)
		if err != nil {
			var fe *FrontmatterError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FrontmatterError", err, err)
			}
			if fe.Line < 1 || fe.Line > strings.Count(in, "\n")+1 {
				t.Fatalf("error line %d outside the input (%d lines)", fe.Line, strings.Count(in, "\n")+1)
			}
			return
		}
		if !strings.HasSuffix(in, body) {
			t.Fatalf("body %q is not a suffix of the input", body)
		}
		for k, v := range fm {
			if k != strings.ToLower(k) || v.Line < 2 {
				t.Fatalf("key %q at line %d", k, v.Line)
			}
		}
	})
}
