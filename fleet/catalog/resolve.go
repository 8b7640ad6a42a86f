package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// maxSuggestions caps the "did you mean" list.
const maxSuggestions = 3

// NotFoundError reports a request that names no skill. Suggestions are skill
// ids, best first, possibly none.
type NotFoundError struct {
	Query       string
	Suggestions []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no skill named %q", e.Query)
	if len(e.Suggestions) == 0 {
		return msg
	}
	return msg + "; did you mean " + orList(e.Suggestions) + "?"
}

// AmbiguousError reports a request that two or more skills answer equally
// well. Candidates are all of their ids in ranking order; the message names
// the first few.
type AmbiguousError struct {
	Query      string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	msg := fmt.Sprintf("skill name %q is ambiguous: it could be ", e.Query)
	if n := len(e.Candidates); n > maxSuggestions {
		return msg + quoted(e.Candidates[:maxSuggestions]) + fmt.Sprintf(" or %d more", n-maxSuggestions)
	}
	return msg + orList(e.Candidates)
}

// Resolve turns a requested name into exactly one entry, or explains why it
// cannot: *NotFoundError (with suggestions) or *AmbiguousError.
//
// First the exact identities: the ID, then the Name, compared by canonical
// form (NFKC, collapsed whitespace, case folded), so "Weather.Chorus"
// resolves to weather.chorus. seeds/002: get, _canonical_skill_name.
//
// Otherwise a GUARDED fallback to search, because the best lexical match for
// a typo is some other skill, and installing it is worse than refusing
// (seeds/002: resolve). What the request looks like decides the guard:
//
//   - one whitespace-separated word is a name, usually a near-miss for one,
//     so every token of it must be a token of the candidate's ID or Name:
//     "weather" resolves to weather.chorus, "wether" resolves to nothing;
//   - a phrase is a description, so it may match anywhere in the candidate
//     (summary, tags, body), but every token of it must be present there:
//     one common word is no permission to answer "totally unknown".
//
// Among the eligible candidates the best search result wins; seeds/002
// takes it even on a tie, but installing is not loading a recipe, so here a
// tie at the top is an *AmbiguousError instead.
func (ix *Index) Resolve(query string) (Entry, error) {
	query = strings.TrimSpace(query)
	switch docs := ix.exact(query); len(docs) {
	case 0:
	case 1:
		return ix.entries[docs[0]], nil
	default:
		return Entry{}, &AmbiguousError{Query: query, Candidates: ix.idsOf(docs)}
	}
	wanted := distinct(words(query))
	if len(wanted) == 0 {
		return Entry{}, &NotFoundError{Query: query}
	}
	allow, ok := ix.eligible(wanted, len(strings.Fields(query)) == 1)
	if !ok {
		return Entry{}, ix.notFound(query)
	}
	hits := ix.search(query, 0, allow)
	if len(hits) == 0 { // unreachable: an eligible entry has every query token
		return Entry{}, ix.notFound(query)
	}
	tied := 1
	for tied < len(hits) && hits[tied].Score == hits[0].Score {
		tied++
	}
	if tied > 1 {
		return Entry{}, &AmbiguousError{Query: query, Candidates: ids(hits[:tied])}
	}
	return hits[0].Entry, nil
}

// exact returns the entries whose canonical ID is the canonical query, or
// failing that those whose canonical Name is; normally one or none.
func (ix *Index) exact(query string) []int {
	key := canonical(query)
	if key == "" {
		return nil
	}
	if docs := ix.byID[key]; len(docs) > 0 {
		return docs
	}
	return ix.byName[key]
}

// eligible marks the entries containing every wanted token: among their
// name tokens when nameShaped, anywhere otherwise. seeds/002: resolve.
func (ix *Index) eligible(wanted []string, nameShaped bool) ([]bool, bool) {
	count := make([]int, len(ix.entries))
	for _, t := range wanted {
		for _, p := range ix.postings[t] {
			if p.name || !nameShaped {
				count[p.doc]++
			}
		}
	}
	allow := make([]bool, len(ix.entries))
	ok := false
	for d, c := range count {
		if c == len(wanted) {
			allow[d], ok = true, true
		}
	}
	return allow, ok
}

// notFound builds the refusal. Near-miss names come first, since a request
// that failed the guard is most often a typo; only when no name is near do
// the search results suggest something, so a shared common word does not
// crowd out the skill the user misspelt.
func (ix *Index) notFound(query string) *NotFoundError {
	sugg := ix.nearNames(query)
	if len(sugg) == 0 {
		sugg = ids(ix.Search(query, maxSuggestions))
	}
	return &NotFoundError{Query: query, Suggestions: sugg}
}

// near is one candidate for "did you mean": how many query tokens are near
// one of its name tokens, and their total edit distance.
type near struct {
	doc, matched, distance int
}

// nearNames suggests the entries whose ID or Name tokens are within a few
// edits (Damerau-Levenshtein, see maxEdits) of the query's tokens. Only the
// entries matching the most query tokens are kept, nearest first, so in
// "weathr.chorus" the "chorus" every example skill shares does not suggest
// all of them.
func (ix *Index) nearNames(query string) []string {
	tokens := Tokenize(query)
	var found []near
	for d, names := range ix.names {
		n := near{doc: d}
		for _, q := range tokens {
			if dist, ok := closest(q, names); ok {
				n.matched++
				n.distance += dist
			}
		}
		if n.matched > 0 {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return nil
	}
	best := slices.MaxFunc(found, func(a, b near) int { return a.matched - b.matched }).matched
	found = slices.DeleteFunc(found, func(n near) bool { return n.matched < best })
	slices.SortStableFunc(found, func(a, b near) int {
		if a.distance != b.distance {
			return a.distance - b.distance
		}
		return strings.Compare(ix.entries[a.doc].ID, ix.entries[b.doc].ID)
	})
	out := make([]string, 0, maxSuggestions)
	for _, n := range found[:min(len(found), maxSuggestions)] {
		out = append(out, ix.entries[n.doc].ID)
	}
	return out
}

// closest returns the smallest edit distance from q to any of names, if one
// is within maxEdits(q).
func closest(q string, names []string) (int, bool) {
	limit := maxEdits(q)
	best, ok := limit+1, false
	for _, n := range names {
		if d := editDistance(q, n, limit); d <= limit && d < best {
			best, ok = d, true
		}
	}
	return best, ok
}

func (ix *Index) idsOf(docs []int) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = ix.entries[d].ID
	}
	return out
}

func ids(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// orList quotes items and joins them as `"a", "b" or "c"`.
func orList(items []string) string {
	if len(items) == 1 {
		return quoted(items)
	}
	return quoted(items[:len(items)-1]) + " or " + quoted(items[len(items)-1:])
}

// quoted quotes items and joins them with commas.
func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
