package wsbus

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Waiters are served in order and a cancelled waiter gives way.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(10)
		if err := b.acquire(context.Background(), 8); err != nil {
			t.Fatal(err)
		}
		order := make(chan int, 3)
		go func() { _ = b.acquire(context.Background(), 5); order <- 5 }()
		synctest.Wait()
		go func() { _ = b.acquire(context.Background(), 2); order <- 2 }() // fits, but queues behind 5
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.acquire(ctx, 10); err == nil {
			t.Fatal("acquired more than is free")
		}
		select {
		case n := <-order:
			t.Fatalf("waiter %d served while 8 of 10 are held", n)
		default:
		}
		b.release(3) // 5 free: the head fits, then nothing is left for the next
		synctest.Wait()
		if n := <-order; n != 5 {
			t.Fatalf("served %d first, want 5", n)
		}
		select {
		case n := <-order:
			t.Fatalf("waiter %d served with nothing free", n)
		default:
		}
		b.release(2)
		synctest.Wait()
		if n := <-order; n != 2 {
			t.Fatalf("served %d, want 2", n)
		}
		if b.maxHeld() != 10 {
			t.Errorf("peak %d, want 10 (5 held and 5 granted)", b.maxHeld())
		}
	})
}
