package connectivity

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Only the reply to the agent's own question counts: a response without the
// request id, with another id, or of another type is ignored.
func TestPHALTakesOnlyItsOwnAnswer(t *testing.T) {
	asked := make(chan envelope.Message, 1)
	p := NewPHAL(func(_ context.Context, m envelope.Message) error {
		select {
		case asked <- m:
		default: // a repeated question
		}
		return nil
	})
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

// A PHAL plugin that connects after the first question still hears one: the
// question is repeated every ReaskEvery under the same request id until the
// answer, and no longer after it.
func TestPHALAsksAgainUntilAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var asked []envelope.Message
		p := NewPHAL(func(_ context.Context, m envelope.Message) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, m)
			return nil
		})
		done := make(chan PHALAnswer, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := p.Ask(ctx)
			if err != nil {
				t.Error(err)
			}
			done <- a
		}()
		time.Sleep(2*ReaskEvery + ReaskEvery/2)
		synctest.Wait()
		mu.Lock()
		n := len(asked)
		first, last := asked[0], asked[n-1]
		mu.Unlock()
		if n != 3 {
			t.Fatalf("asked %d times in 2.5 intervals, want 3", n)
		}
		if first.Context[KeyRequestID] != last.Context[KeyRequestID] {
			t.Fatalf("the repeated question has another request id: %v vs %v", first.Context, last.Context)
		}
		answer, err := first.Response(map[string]any{"internet_connected": true})
		if err != nil {
			t.Fatal(err)
		}
		p.Observe(answer)
		if a := <-done; a != (PHALAnswer{Network: true, Internet: true}) {
			t.Fatalf("Ask = %+v, want internet", a)
		}
		time.Sleep(3 * ReaskEvery)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != n {
			t.Fatalf("asked %d more times after the answer", len(asked)-n)
		}
	})
}
