package catalog

import "unicode/utf8"

// maxEdits is how far a query token may be from a name token and still be
// suggested: never more than 2 (the brief for `install wether`), and fewer
// for short tokens, where two edits turn almost anything into anything
// (the thresholds of Elasticsearch's "AUTO" fuzziness): 0 for up to two
// runes, 1 for three to five, 2 beyond.
func maxEdits(token string) int {
	switch n := utf8.RuneCountInString(token); {
	case n <= 2:
		return 0
	case n <= 5:
		return 1
	default:
		return 2
	}
}

// editDistance is the Damerau-Levenshtein distance between a and b in its
// optimal-string-alignment form (insertions, deletions, substitutions and
// transpositions of adjacent runes, no substring edited twice), which is
// what typos need. Any result above limit is reported as limit+1, so a
// hopeless pair costs no more than the length check.
func editDistance(a, b string, limit int) int {
	if abs(utf8.RuneCountInString(a)-utf8.RuneCountInString(b)) > limit {
		return limit + 1
	}
	ra, rb := []rune(a), []rune(b)
	// Three rows: two back (for transpositions), previous, current.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], limit+1)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
