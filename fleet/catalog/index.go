package catalog

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// summaryBoost is seeds/002's _SUMMARY_BOOST: a query term found in a
// skill's name or description is stronger evidence than the same term
// elsewhere, so it counts once as body text and again ×1.5.
const summaryBoost = 1.5

// posting records that a token occurs in one entry, and where.
type posting struct {
	doc     int32
	summary bool // in ID, Name, Title or Description (boosted)
	name    bool // in ID or Name (what a one-word request must match)
}

// Index is an immutable search index over a fixed set of entries. It is
// safe for concurrent use; rebuild it (NewIndex) when the catalog changes,
// so the document frequencies always describe the corpus being ranked
// (seeds/002: _SearchIndex is keyed on the corpus it was built from).
type Index struct {
	entries  []Entry
	names    [][]string           // per entry: distinct tokens of ID and Name
	postings map[string][]posting // token → entries containing it, ascending doc
	byID     map[string][]int     // canonical ID → entries
	byName   map[string][]int     // canonical Name → entries
}

// NewIndex builds the index, precomputing every token's document frequency.
// Entries are expected to have distinct IDs (the store guarantees it);
// duplicates are kept and Resolve reports them as ambiguous.
func NewIndex(entries []Entry) *Index {
	ix := &Index{
		entries:  slices.Clone(entries),
		postings: make(map[string][]posting),
		byID:     make(map[string][]int),
		byName:   make(map[string][]int),
	}
	for i, e := range ix.entries {
		ix.add(i, e)
	}
	return ix
}

func (ix *Index) add(i int, e Entry) {
	names := tokenSet(e.ID, e.Name)
	ix.names = append(ix.names, distinct(append(words(e.ID), words(e.Name)...)))
	summary := tokenSet(e.ID, e.Name, e.Title, e.Description)
	keywords := tokenSet(append([]string{e.ID, e.Name, e.Title, e.Description, e.Body}, e.Tags...)...)
	for t := range keywords {
		_, s := summary[t]
		_, n := names[t]
		ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), summary: s, name: n})
	}
	if k := canonical(e.ID); k != "" {
		ix.byID[k] = append(ix.byID[k], i)
	}
	if k := canonical(e.Name); k != "" {
		ix.byName[k] = append(ix.byName[k], i)
	}
}

// Len reports how many entries the index holds.
func (ix *Index) Len() int { return len(ix.entries) }

// weight is the smoothed inverse document frequency of a token (the BM25
// form), strictly positive even for a token every entry has, so a
// one-skill catalog still ranks its match. seeds/002: _SearchIndex.weight.
func (ix *Index) weight(token string) float64 {
	total := float64(len(ix.entries))
	df := float64(len(ix.postings[token]))
	return math.Log(1.0 + (total-df+0.5)/(df+0.5))
}

// Search ranks the entries against query, best first, and returns at most
// limit results (limit <= 0: all of them). Only entries scoring above zero
// are returned. seeds/002: SkillLoader.search:
//
//   - each query token (Tokenize) that an entry contains counts its IDF
//     weight once, and again ×1.5 if it is in the entry's summary (ID,
//     Name, Title or Description), so a summary match counts 2.5×;
//   - the tokens are added in sorted order, so two entries matching the
//     same tokens get bit-identical scores and tie exactly;
//   - ties rank by ID ascending (seeds/002: by name), then Name, then the
//     order the entries were given in, so the order is total.
func (ix *Index) Search(query string, limit int) []Result {
	return ix.search(query, limit, nil)
}

// search is Search restricted to entries permitted by allow (nil: all).
// Ranking still uses the whole corpus's frequencies, and the restriction
// applies before the limit (seeds/002: permits).
func (ix *Index) search(query string, limit int, allow []bool) []Result {
	tokens := Tokenize(query)
	slices.Sort(tokens)
	body := make([]float64, len(ix.entries))
	boost := make([]float64, len(ix.entries))
	var hit []int32
	for _, t := range tokens {
		w := ix.weight(t)
		for _, p := range ix.postings[t] {
			if allow != nil && !allow[p.doc] {
				continue
			}
			if body[p.doc] == 0 {
				hit = append(hit, p.doc)
			}
			body[p.doc] += w
			if p.summary {
				boost[p.doc] += w
			}
		}
	}
	for _, d := range hit {
		body[d] += summaryBoost * boost[d] // now the score
	}
	rank := func(a, b int32) int {
		if c := cmp.Compare(body[b], body[a]); c != 0 {
			return c
		}
		if c := compareNames(ix.entries[a], ix.entries[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // position last, so the order is total
	}
	hit = top(hit, limit, rank)
	out := make([]Result, len(hit))
	for i, d := range hit {
		out[i] = Result{Entry: ix.entries[d], Score: body[d]}
	}
	return out
}

// top orders docs by rank and keeps the first limit (all if limit <= 0).
// A short limit over many hits, the usual search, keeps a sorted buffer
// instead of sorting everything: most hits lose one comparison with the
// buffer's last entry and cost nothing more.
func top(docs []int32, limit int, rank func(a, b int32) int) []int32 {
	if limit <= 0 || limit*4 >= len(docs) {
		slices.SortFunc(docs, rank)
		if limit > 0 && len(docs) > limit {
			docs = docs[:limit]
		}
		return docs
	}
	best := make([]int32, 0, limit+1)
	for _, d := range docs {
		if len(best) == limit && rank(d, best[limit-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(best, d, rank)
		best = slices.Insert(best, i, d)
		if len(best) > limit {
			best = best[:limit]
		}
	}
	return best
}

// compareResults is the ranking order: score descending, then ID, then
// Name (Search also breaks what remains by input position).
func compareResults(a, b Result) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return compareNames(a.Entry, b.Entry)
}

func compareNames(a, b Entry) int {
	if c := strings.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func tokenSet(texts ...string) map[string]struct{} {
	set := make(map[string]struct{})
	for _, s := range texts {
		for _, w := range words(s) {
			set[w] = struct{}{}
		}
	}
	return set
}
