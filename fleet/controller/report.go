package controller

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// report is the part of the skills topic payload the controller reads
// (docs/topics.md); unknown fields are ignored.
// Skill states of the skills topic that the reconciler acts on.
const (
	stateLoaded  = state.Loaded
	stateWaiting = state.Waiting
	stateFailed  = state.Failed
	stateInvalid = state.Invalid
)

// parseReport reads a skills payload (gateway/state); an empty one (a
// cleared retained topic) is the empty report.
func parseReport(payload []byte) (state.Skills, error) {
	r, err := state.ParseSkills(payload)
	return r, invalidState(err)
}

// maxPooledSkills bounds the skill tables c.reports keeps, so one huge
// report does not pin its table for good.
const maxPooledSkills = 64

// reportTable is the memory of a skill table that report after report is
// parsed into: each pass that parses a report for its own use (the inbox's
// stateUpdate, Reconcile) takes one from c.reports and puts it back when
// nothing refers to the report any more. A new table per report was the
// largest share of the bytes the controller allocated in a 10,000-device
// install (state.ParseSkills, 55 MB of 1.1 GB; issue 19 round seven).
type reportTable struct {
	skills []state.Skill
	raw    []byte // the payload parsed last, when the store reads it into here (deviceInto)
}

// maxPooledReport bounds the payload memory c.reports keeps.
const maxPooledReport = 16 << 10

// deviceReader is a Store that reads a device's skills report into the
// caller's memory (fleet/sqlite's GetDeviceInto).
type deviceReader interface {
	GetDeviceInto(ctx context.Context, id string, buf []byte) (*fleet.Device, error)
}

// deviceInto reads device id as the store's GetDevice does, its Reported
// in t's memory when the store can put it there: valid until t is read
// into again or put back.
func (c *Controller) deviceInto(ctx context.Context, t *reportTable, id string) (*fleet.Device, error) {
	r, ok := c.store.(deviceReader)
	if !ok {
		return c.store.GetDevice(ctx, id)
	}
	d, err := r.GetDeviceInto(ctx, id, t.raw)
	if err == nil && cap(d.Reported) > cap(t.raw) && cap(d.Reported) <= maxPooledReport {
		t.raw = d.Reported[:0]
	}
	return d, err
}

// reportTable takes a table from the pool (a new one when it is empty).
// Its owner is the caller until putReportTable.
func (c *Controller) reportTable() *reportTable {
	if t, ok := c.reports.Get().(*reportTable); ok {
		return t
	}
	return &reportTable{}
}

// putReportTable hands t back: no report parsed into it may be used after.
func (c *Controller) putReportTable(t *reportTable) { c.reports.Put(t) }

// parse is parseReport into t's memory: the result is valid until t is
// parsed into again or put back.
func (t *reportTable) parse(payload []byte) (state.Skills, error) {
	r, err := state.ParseSkillsInto(payload, t.skills)
	if c := cap(r.Skills); c > cap(t.skills) && c <= maxPooledSkills {
		t.skills = r.Skills[:0]
	}
	return r, invalidState(err)
}

// invalidState makes gateway/state's refusal the store's EINVALID.
func invalidState(err error) error {
	if err == nil {
		return nil
	}
	return fleet.Errorf(fleet.EINVALID, "%s", strings.TrimPrefix(err.Error(), state.ErrInvalid.Error()+": "))
}

func marshalDetail(v any) (json.RawMessage, error) { return json.Marshal(v) }

// parseAvailability reads an availability payload: online or offline.
func parseAvailability(payload []byte) (online bool, err error) {
	switch string(payload) {
	case "online":
		return true, nil
	case "offline":
		return false, nil
	}
	return false, fleet.Errorf(fleet.EINVALID, "availability %q: want online or offline", truncate(string(payload), 32))
}

// parseBirth reads a birth payload (gateway/state).
func parseBirth(payload []byte) (state.Birth, error) {
	b, err := state.ParseBirth(payload)
	return b, invalidState(err)
}

// parseConnectivity checks a connectivity payload, which is stored verbatim.
func parseConnectivity(payload []byte) error {
	_, err := state.ParseConnectivity(payload)
	return invalidState(err)
}
