package connectivity

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Only the reply to the agent's own question counts: a response without the
// request id, with another id, or of another type is ignored.
func TestPHALTakesOnlyItsOwnAnswer(t *testing.T) {
	asked := make(chan envelope.Message, 1)
	p := NewPHAL(func(_ context.Context, m envelope.Message) error { asked <- m; return nil })
	yes := map[string]any{"internet_connected": true, "network_connected": true}
	type result struct {
		a   PHALAnswer
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a, err := p.Ask(ctx)
		done <- result{a, err}
	}()
	q := <-asked
	id, _ := q.Context[KeyRequestID].(string)
	if q.Type != PHALInternetCheck || len(id) != 32 {
		t.Fatalf("question %+v, want %s with a request id", q, PHALInternetCheck)
	}
	p.Observe(envelope.New(PHALInternetCheckResponse, yes))                                    // unsolicited
	p.Observe(envelope.New(PHALInternetCheckResponse, yes).WithContext(KeyRequestID, "other")) // someone else's
	p.Observe(envelope.New("mycroft.internet.connected", yes).WithContext(KeyRequestID, id))   // wrong type
	select {
	case r := <-done:
		t.Fatalf("Ask returned %+v on a message that is not its answer", r)
	case <-time.After(50 * time.Millisecond): // a negative check: nothing may arrive
	}
	answer, err := q.Response(map[string]any{"internet_connected": false, "network_connected": true})
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(answer) // what the plugin's message.response sends: the context copied

	r := <-done
	if r.err != nil || r.a != (PHALAnswer{Network: true}) {
		t.Fatalf("Ask = %+v, %v; want network only", r.a, r.err)
	}
	if len(p.waiting) != 0 {
		t.Error("the question stayed registered")
	}
}
