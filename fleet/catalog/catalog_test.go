package catalog

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// fixture is a small fixed catalog. df counts, for the weights below (N=8):
// weather 3 (weather.chorus summary, storm-alerts tag, screen body),
// sets 2 (timer, alarm descriptions), chorus 8.
var fixture = []Entry{
	{ID: "weather.chorus", Title: "Weather", Description: "Tells the forecast for your city", Tags: []string{"outdoor"}},
	{ID: "storm-alerts.chorus", Description: "Pushes severe storm alerts", Tags: []string{"weather"}},
	{ID: "hello.chorus", Description: "Says hello and answers a ping"},
	{ID: "screen.chorus", Description: "Shows text on the screen", Body: "Renders a weather card when asked."},
	{ID: "spectral.chorus", Description: "Spectral analysis of audio", Body: "Takes the Fourier transform of a signal."},
	{ID: "timer.chorus", Name: "kitchen-timer", Description: "Sets a countdown"},
	{ID: "alarm.chorus", Description: "Sets an alarm"},
	{ID: "r.chorus", Description: "Runs R scripts"},
}

// idf is seeds/002's weight, written out independently of Index.weight.
func idf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"only punctuation", " .-_ ", nil},
		{"skill id splits on dot", "Weather.Chorus", []string{"weather", "chorus"}},
		{"dash underscore dot digits", "snake_case-id.v2", []string{"snake", "case", "id", "v2"}},
		{"one-character dropped beside longer", "t-test", []string{"test"}},
		{"one-character kept alone", "R", []string{"r"}},
		{"one-character kept when all are", "a b a", []string{"a", "b"}},
		{"distinct in first-seen order", "weather Weather WEATHER city", []string{"weather", "city"}},
		{"accented letters stay in the word", "Météo MÉTÉO", []string{"météo"}},
		{"full-width folds by NFKC", "ＷＥＡＴＨＥＲ", []string{"weather"}},
		{"full case folding", "STRASSE straße", []string{"strasse"}},
		{"combining mark is part of the word", "cafe\u0301", []string{"café"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSearchRanking(t *testing.T) {
	ix := NewIndex(fixture)
	n := float64(len(fixture))
	wWeather, wSets, wForecast := idf(n, 3), idf(n, 2), idf(n, 1)
	tests := []struct {
		name   string
		query  string
		limit  int
		want   []string
		scores []float64
	}{{
		// summary ×1.5 on top of the body count: 2.5w beats 1w, and the
		// two 1w body/tag matches tie and fall back to ID order.
		name:   "summary match weighted x1.5 and ties by id",
		query:  "weather",
		want:   []string{"weather.chorus", "screen.chorus", "storm-alerts.chorus"},
		scores: []float64{wWeather + 1.5*wWeather, wWeather, wWeather},
	}, {
		name:   "equal description matches tie by id",
		query:  "sets",
		want:   []string{"alarm.chorus", "timer.chorus"},
		scores: []float64{wSets + 1.5*wSets, wSets + 1.5*wSets},
	}, {
		name:   "rare token outweighs common one",
		query:  "weather forecast",
		want:   []string{"weather.chorus", "screen.chorus", "storm-alerts.chorus"},
		scores: []float64{(wForecast + wWeather) + 1.5*(wForecast+wWeather), wWeather, wWeather},
	}, {
		name:  "limit applies after ranking",
		query: "weather",
		limit: 2,
		want:  []string{"weather.chorus", "screen.chorus"},
	}, {
		name:  "one-character token dropped beside a longer one",
		query: "r weather",
		want:  []string{"weather.chorus", "screen.chorus", "storm-alerts.chorus"},
	}, {
		name:  "one-character token searched alone",
		query: "R",
		want:  []string{"r.chorus"},
	}, {
		name:  "body-only match found",
		query: "fourier",
		want:  []string{"spectral.chorus"},
	}, {
		name:  "no match",
		query: "zebra",
		want:  nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ix.Search(tt.query, tt.limit)
			if ids := ids(got); !slices.Equal(ids, tt.want) {
				t.Fatalf("Search(%q) = %q, want %q", tt.query, ids, tt.want)
			}
			for i, want := range tt.scores {
				if math.Abs(got[i].Score-want) > 1e-12 {
					t.Errorf("Search(%q)[%d] score = %v, want %v", tt.query, i, got[i].Score, want)
				}
			}
		})
	}
}

// Entries matching the same tokens must tie bit for bit, whatever order the
// tokens were typed in, so the tie-break and not rounding decides.
func TestSearchTiesExactly(t *testing.T) {
	ix := NewIndex([]Entry{
		{ID: "b.skill", Description: "alpha beta gamma"},
		{ID: "a.skill", Description: "gamma beta alpha"},
		{ID: "c.skill", Description: "alpha"},
	})
	for _, q := range []string{"alpha beta gamma", "gamma alpha beta", "beta gamma alpha"} {
		got := ix.Search(q, 0)
		if got[0].Score != got[1].Score {
			t.Errorf("Search(%q): %v and %v differ", q, got[0].Score, got[1].Score)
		}
		if ids := ids(got); !slices.Equal(ids, []string{"a.skill", "b.skill", "c.skill"}) {
			t.Errorf("Search(%q) = %q", q, ids)
		}
	}
}

func TestResolve(t *testing.T) {
	ix := NewIndex(fixture)
	tests := []struct {
		name    string
		query   string
		want    string // resolved id, or "" for an error
		wantErr string // full error message
	}{
		{name: "exact id", query: "weather.chorus", want: "weather.chorus"},
		{name: "exact id case-insensitive", query: "Weather.CHORUS", want: "weather.chorus"},
		{name: "exact id with spaces", query: "  weather.chorus ", want: "weather.chorus"},
		{name: "exact name", query: "Kitchen-Timer", want: "timer.chorus"},
		{name: "one word matching a name token", query: "weather", want: "weather.chorus"},
		{name: "one word of id tokens", query: "weather-chorus", want: "weather.chorus"},
		{name: "one word name beats body mentions", query: "spectral", want: "spectral.chorus"},
		{name: "phrase with every word in the body", query: "fourier signal", want: "spectral.chorus"},
		{name: "phrase with every word in the summary", query: "storm alerts", want: "storm-alerts.chorus"},
		{name: "phrase mixing name and description", query: "weather forecast", want: "weather.chorus"},
		{
			name:    "typo suggests the name",
			query:   "wether",
			wantErr: `no skill named "wether"; did you mean "weather.chorus"?`,
		},
		{
			name:    "typo in an id suggests only the near name",
			query:   "weathr.chorus",
			wantErr: `no skill named "weathr.chorus"; did you mean "weather.chorus"?`,
		},
		{
			name:    "one word found only in a description is refused",
			query:   "forecast",
			wantErr: `no skill named "forecast"; did you mean "weather.chorus"?`,
		},
		{
			name:    "phrase missing a word is refused",
			query:   "fourier banana",
			wantErr: `no skill named "fourier banana"; did you mean "spectral.chorus"?`,
		},
		{name: "unknown phrase", query: "totally unknown", wantErr: `no skill named "totally unknown"`},
		{name: "empty", query: "", wantErr: `no skill named ""`},
		{name: "punctuation only", query: "..", wantErr: `no skill named ".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.Resolve(tt.query)
			if tt.wantErr != "" {
				var nf *NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("Resolve(%q) = %q, %v; want NotFoundError", tt.query, got.ID, err)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("Resolve(%q) error = %q, want %q", tt.query, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.ID != tt.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tt.query, got.ID, err, tt.want)
			}
		})
	}
}

func TestResolveAmbiguous(t *testing.T) {
	ix := NewIndex([]Entry{
		{ID: "weather.chorus", Description: "forecasts"},
		{ID: "weather.openvoice", Description: "forecasts"},
		{ID: "clock.one", Name: "clock"},
		{ID: "clock.two", Name: "Clock"},
		{ID: "news.chorus", Description: "headlines"},
	})
	tests := []struct {
		name, query string
		want        []string
	}{
		{"one word names two skills equally", "weather", []string{"weather.chorus", "weather.openvoice"}},
		{"phrase fits two skills equally", "weather forecasts", []string{"weather.chorus", "weather.openvoice"}},
		{"two skills share a name", "CLOCK", []string{"clock.one", "clock.two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Resolve(tt.query)
			var amb *AmbiguousError
			if !errors.As(err, &amb) {
				t.Fatalf("Resolve(%q) error = %v, want AmbiguousError", tt.query, err)
			}
			if !slices.Equal(amb.Candidates, tt.want) {
				t.Errorf("candidates = %q, want %q", amb.Candidates, tt.want)
			}
		})
	}
	_, err := ix.Resolve("weather")
	want := `skill name "weather" is ambiguous: it could be "weather.chorus" or "weather.openvoice"`
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
	err = &AmbiguousError{Query: "chorus", Candidates: []string{"a", "b", "c", "d", "e"}}
	want = `skill name "chorus" is ambiguous: it could be "a", "b", "c" or 2 more`
	if err.Error() != want {
		t.Errorf("long message = %q, want %q", err, want)
	}
}

func TestNotFoundMessage(t *testing.T) {
	tests := []struct {
		name string
		err  NotFoundError
		want string
	}{
		{"no suggestion", NotFoundError{Query: "x"}, `no skill named "x"`},
		{"one", NotFoundError{Query: "x", Suggestions: []string{"a"}}, `no skill named "x"; did you mean "a"?`},
		{"two", NotFoundError{Query: "x", Suggestions: []string{"a", "b"}}, `no skill named "x"; did you mean "a" or "b"?`},
		{"three", NotFoundError{Query: "x", Suggestions: []string{"a", "b", "c"}}, `no skill named "x"; did you mean "a", "b" or "c"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"weather", "weather", 2, 0},
		{"wether", "weather", 2, 1},
		{"waether", "weather", 2, 1}, // adjacent transposition counts once
		{"wthr", "weather", 2, 3},    // beyond the limit reports limit+1
		{"", "ab", 2, 2},
		{"météo", "meteo", 2, 2},
		{"ca", "abc", 3, 3}, // optimal string alignment, not unrestricted
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func FuzzSearchResolve(f *testing.F) {
	for _, s := range []string{"", "weather", "wether", "t-test", "R", "Météo ＷＥＡＴＨＥＲ", "a b c", "\xff\xfe", "fourier signal"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, q string, limit int) {
		ix := NewIndex(append(slices.Clone(fixture), Entry{ID: q, Name: q, Description: q}))
		rs := ix.Search(q, limit)
		if limit > 0 && len(rs) > limit {
			t.Fatalf("Search(%q, %d) returned %d", q, limit, len(rs))
		}
		if !slices.IsSortedFunc(rs, compareResults) {
			t.Fatalf("Search(%q) not sorted: %v", q, rs)
		}
		for _, r := range rs {
			if !(r.Score > 0) {
				t.Fatalf("Search(%q) score %v", q, r.Score)
			}
		}
		_, err := ix.Resolve(q)
		var nf *NotFoundError
		var amb *AmbiguousError
		if err != nil && !errors.As(err, &nf) && !errors.As(err, &amb) {
			t.Fatalf("Resolve(%q) error %T", q, err)
		}
		// The catalog holds an entry whose id is q, so q must resolve to it
		// (or be ambiguous with a fixture of the same id).
		if nf != nil && canonical(q) != "" {
			t.Fatalf("Resolve(%q) = %v with an entry of that id", q, err)
		}
	})
}
