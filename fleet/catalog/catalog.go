// Package catalog ranks and resolves skills in the fleet's skill catalog: the
// search behind `chorus fleet skill search QUERY` and the name resolution
// behind `chorus fleet install NAME`, both as seeds/002 (the SKILL.md loader)
// defines them. It is pure: it does no I/O and keeps no global state, so the
// store loads entries and the CLI/API word the errors.
package catalog

// Entry is one published skill as the catalog ranks it. seeds/002 ranks a
// skill over its name and one-line description (the "summary", weighted
// ×1.5) and its SKILL.md body; the fields map onto those as follows.
type Entry struct {
	// ID is the skill id, the SKILL.md frontmatter name ("weather.chorus"):
	// seeds/002's Skill.name. It is a name and part of the summary.
	ID string
	// Name is an optional second name a user may type for the skill (for
	// example its directory name). It is a name and part of the summary.
	Name string
	// Title is an optional display title; it is part of the summary but not
	// a name, so a one-word request cannot resolve through it.
	Title string
	// Description is the one-line summary (frontmatter description).
	Description string
	// Tags are matched like body text: once, without the summary boost.
	Tags []string
	// Body is the SKILL.md body with the frontmatter stripped, if the caller
	// has it; seeds/002 matches it without the boost.
	Body string
}

// Result is one search hit. Score is the raw seeds/002 score; presentation
// (seeds/002 rounds to two decimals) is the caller's business.
type Result struct {
	Entry
	Score float64
}
