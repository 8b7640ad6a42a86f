package controller

import (
	"context"
	"errors"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/catalog"
)

// Search ranks the catalog's skills for query (seeds/002) and returns at
// most limit hits (0 = all), each with its latest version.
func (c *Controller) Search(ctx context.Context, query string, limit int) ([]*fleet.SkillVersion, []float64, error) {
	ix, byID, err := c.index(ctx)
	if err != nil {
		return nil, nil, err
	}
	rs := ix.Search(query, limit)
	vs, scores := make([]*fleet.SkillVersion, 0, len(rs)), make([]float64, 0, len(rs))
	for _, r := range rs {
		if v, ok := byID[r.ID]; ok {
			vs, scores = append(vs, v), append(scores, r.Score)
		}
	}
	return vs, scores, nil
}

// Resolve turns a requested name into one skill with seeds/002's guarded
// fallback: not found (with "did you mean ...?") or invalid when ambiguous.
func (c *Controller) Resolve(ctx context.Context, query string) (*fleet.SkillVersion, error) {
	ix, byID, err := c.index(ctx)
	if err != nil {
		return nil, err
	}
	e, err := ix.Resolve(query)
	var nf *catalog.NotFoundError
	var amb *catalog.AmbiguousError
	switch {
	case errors.As(err, &nf):
		return nil, fleet.Errorf(fleet.ENOTFOUND, "%s", nf.Error())
	case errors.As(err, &amb):
		return nil, fleet.Errorf(fleet.EINVALID, "%s", amb.Error())
	case err != nil:
		return nil, err
	}
	v, ok := byID[e.ID]
	if !ok {
		return nil, fleet.Errorf(fleet.ENOTFOUND, "no skill named %q", query)
	}
	return v, nil
}

func (c *Controller) index(ctx context.Context) (*catalog.Index, map[string]*fleet.SkillVersion, error) {
	skills, err := c.store.ListSkills(ctx)
	if err != nil {
		return nil, nil, err
	}
	entries := make([]catalog.Entry, 0, len(skills))
	byID := make(map[string]*fleet.SkillVersion, len(skills))
	for _, s := range skills {
		entries = append(entries, catalog.Entry{ID: s.SkillID, Title: s.Title, Description: s.Description})
		byID[s.SkillID] = s
	}
	return catalog.NewIndex(entries), byID, nil
}
