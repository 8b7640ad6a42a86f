package bus

import (
	"strconv"
	"testing"
)

// The queue is first in, first out, refuses the packet past its bound,
// takes packets again once popped, and gives its storage back when drained.
func TestFIFO(t *testing.T) {
	q := newFIFO(3)
	if _, ok := q.pop(); ok {
		t.Fatal("pop of an empty queue returned a packet")
	}
	for i := range 3 {
		if !q.push(Packet{Topic: strconv.Itoa(i)}) {
			t.Fatalf("push %d refused below the bound", i)
		}
	}
	if q.push(Packet{Topic: "3"}) {
		t.Fatal("push past the bound accepted")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("ready not signalled after a push")
	}
	if p, _ := q.pop(); p.Topic != "0" {
		t.Fatalf("pop = %q, want the oldest, 0", p.Topic)
	}
	if !q.push(Packet{Topic: "4"}) {
		t.Fatal("push refused after a pop made room")
	}
	for _, want := range []string{"1", "2", "4"} {
		p, ok := q.pop()
		if !ok || p.Topic != want {
			t.Fatalf("pop = %q, %v; want %q", p.Topic, ok, want)
		}
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop of a drained queue returned a packet")
	}

	big := newFIFO(1000)
	for i := range 100 {
		big.push(Packet{Topic: strconv.Itoa(i)})
	}
	for range 100 {
		big.pop()
	}
	if cap(big.items) > keepCap {
		t.Errorf("drained queue keeps capacity %d, want at most %d", cap(big.items), keepCap)
	}

	// A queue that never empties (one pop per push, always 10 behind) stays
	// within its bound's storage.
	busy := newFIFO(16)
	for i := range 10 {
		busy.push(Packet{Topic: strconv.Itoa(i)})
	}
	for i := 10; i < 100_000; i++ {
		if !busy.push(Packet{Topic: strconv.Itoa(i)}) {
			t.Fatalf("push %d refused with 10 queued", i)
		}
		p, _ := busy.pop()
		if want := strconv.Itoa(i - 10); p.Topic != want {
			t.Fatalf("pop = %q, want %q", p.Topic, want)
		}
	}
	if c := cap(busy.items); c > 2*16 {
		t.Errorf("a queue always 10 behind grew to capacity %d, want at most %d", c, 2*16)
	}
}
