package connectivity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// The PHAL connectivity question and its answer (ovos-behaviour §1.3:
// ovos-PHAL-plugin-connectivity-events answers with message.response, which
// copies the request's context).
const (
	PHALInternetCheck         = "ovos.PHAL.internet_check"
	PHALInternetCheckResponse = PHALInternetCheck + ".response"
)

// KeyRequestID is the context key carrying the agent's own request id; the
// PHAL plugin's answer copies it back.
const KeyRequestID = "chorus_request_id"

// PHAL asks ovos.PHAL.internet_check and trusts only an answer that is a
// reply to its own question (the request id it sent, copied back) and that
// came from a trusted source: Observe is fed only with what the device's
// OVOS services sent on their authenticated websocket route, never with what
// arrives over MQTT, where any skill may publish the answer's type (issue
// 14, finding 3; docs/security.md, "Who may send what the agent acts on").
// A skill can read the question on the bus and copy its id, but cannot send
// as the services. Its methods are safe for concurrent use.
type PHAL struct {
	emit func(ctx context.Context, m envelope.Message) error

	// mu guards waiting: request id -> where its answer goes.
	mu      sync.Mutex
	waiting map[string]chan PHALAnswer
}

// PHALAnswer is what the plugin reported.
type PHALAnswer struct {
	Network, Internet bool
}

// NewPHAL returns a PHAL that asks through emit (the device bus).
func NewPHAL(emit func(ctx context.Context, m envelope.Message) error) *PHAL {
	return &PHAL{emit: emit, waiting: map[string]chan PHALAnswer{}}
}

// ReaskEvery is how often Ask repeats its question while it waits: the
// device's OVOS services start next to the agent at boot, and a PHAL plugin
// that connects a moment after the first question must still hear one.
const ReaskEvery = 250 * time.Millisecond

// Ask emits the question with a fresh request id, repeats it every
// ReaskEvery under the same id, and waits for its answer until ctx ends.
func (p *PHAL) Ask(ctx context.Context) (PHALAnswer, error) {
	id, ch := p.register()
	defer p.unregister(id)
	q := envelope.New(PHALInternetCheck, map[string]any{}).
		WithContext(envelope.KeySource, "skills").WithContext(KeyRequestID, id)
	if err := p.emit(ctx, q); err != nil {
		return PHALAnswer{}, fmt.Errorf("ask %s: %w", PHALInternetCheck, err)
	}
	t := time.NewTicker(ReaskEvery)
	defer t.Stop()
	for {
		select {
		case a := <-ch:
			return a, nil
		case <-t.C:
			if err := p.emit(ctx, q); err != nil && ctx.Err() == nil {
				return PHALAnswer{}, fmt.Errorf("ask %s again: %w", PHALInternetCheck, err)
			}
		case <-ctx.Done():
			return PHALAnswer{}, fmt.Errorf("no trusted answer to %s: %w", PHALInternetCheck, ctx.Err())
		}
	}
}

// Observe takes one message from a trusted source; an answer to a pending
// question is delivered to its asker, anything else is ignored. It never
// blocks.
func (p *PHAL) Observe(m envelope.Message) {
	if m.Type != PHALInternetCheckResponse {
		return
	}
	id, _ := m.Context[KeyRequestID].(string)
	p.mu.Lock()
	ch := p.waiting[id]
	p.mu.Unlock()
	if ch == nil {
		return
	}
	internet, _ := m.Data["internet_connected"].(bool)
	network, _ := m.Data["network_connected"].(bool)
	select {
	case ch <- PHALAnswer{Network: network || internet, Internet: internet}:
	default: // answered already
	}
}

func (p *PHAL) register() (string, chan PHALAnswer) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ch := make(chan PHALAnswer, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	p.mu.Unlock()
	return id, ch
}

func (p *PHAL) unregister(id string) {
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
}
