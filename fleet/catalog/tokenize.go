package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Tokenize returns the query terms of s that can carry evidence, distinct and
// in order of first appearance.
//
// seeds/002: _tokenize lower-cases and takes the runs of [a-z0-9]; here a
// word is a run of Unicode letters, digits and combining marks after NFKC
// and case folding, so "Météo" and "MÉTÉO" are one word rather than "m",
// "t", "o" (identical to seeds/002 for ASCII). Every other rune separates
// words, so the '.', '-' and '_' of a skill id split it: "weather.chorus"
// is "weather" and "chorus", "t-test" is "t" and "test".
//
// seeds/002: _query_tokens drops one-character tokens (punctuation debris
// such as the "t" of "t-test") whenever s has a longer token, and keeps
// them when they are all there is, so a bare "R" still finds something.
func Tokenize(s string) []string {
	all := distinct(words(s))
	long := all[:0:0]
	for _, w := range all {
		if utf8.RuneCountInString(w) > 1 {
			long = append(long, w)
		}
	}
	if len(long) == 0 {
		return all
	}
	return long
}

// words returns every word of s in order, duplicates and one-character
// words included: what the index stores and the resolution guard compares.
func words(s string) []string {
	return strings.FieldsFunc(fold(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}

// fold lower-cases s for matching. ASCII takes a fast path; anything else
// gets NFKC, case folding, and NFKC again (folding can un-normalise).
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
		}
	}
	return strings.ToLower(s)
}

// canonical is the collision identity of a name, the same rule as
// device/discovery.Identity: NFKC, whitespace collapsed and trimmed, case
// folded. seeds/002: _canonical_skill_name.
func canonical(name string) string {
	s := strings.Join(strings.Fields(norm.NFKC.String(name)), " ")
	return norm.NFKC.String(cases.Fold().String(s))
}

func distinct(ws []string) []string {
	seen := make(map[string]struct{}, len(ws))
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		if _, ok := seen[w]; !ok {
			seen[w] = struct{}{}
			out = append(out, w)
		}
	}
	return out
}
