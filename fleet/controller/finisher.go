package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// The executions a reconcile pass judges ended (judge) are written by one
// goroutine, runFinisher, in one store transaction per batch
// (fleet.RolloutService.TransitionExecutions) instead of one each: at 1,000
// devices the per-execution write was a quarter of the store's write time
// and held the single writer between the inbox's and the engine's writes
// (docs/benchmarks.md, issue 19).
//
// Guarantees:
//   - A verdict is written at most once: judge skips an execution whose
//     verdict is queued (pendingFinish), so a second report of the device
//     cannot queue a second, possibly different, one.
//   - Nothing judge queued is dropped while the controller runs: a batch the
//     store refuses as a whole (not one move: the transaction) requeues its
//     devices, whose next pass judges them again from the stored report.
//   - Close writes every queued verdict before it returns (the channel is
//     closed after the workers exited, and drained). A crash before that
//     leaves the executions in progress in the store, as a crash before
//     the one-at-a-time write did: every device is reconciled at start-up
//     (Start), which judges them again (level-based, STYLE.md §6).

const (
	// finishQueue bounds the verdicts waiting for the writer; a pass that
	// finds it full waits (memory stays bounded, whatever the fleet's size).
	finishQueue = 1024
	// finishBatch is the most verdicts one transaction writes, so one batch
	// holds the single writer for a bounded time.
	finishBatch = 256
	// finishTimeout bounds one batch's write, also the last one at Close,
	// when the controller's context is already canceled.
	finishTimeout = 30 * time.Second
)

// verdictMsg is one judged execution waiting for runFinisher.
type verdictMsg struct {
	e      *fleet.Execution
	to     fleet.ExecState
	reason string
}

// queueFinish hands a verdict to runFinisher, or, when none runs (a
// Reconcile outside Start…Close), writes it at once (finish). A verdict of
// an execution that has one queued already is dropped (nil). ctx's error
// when it ended while the queue was full: nothing is queued, and the pass
// fails, so the device is judged again after a backoff.
func (c *Controller) queueFinish(ctx context.Context, e *fleet.Execution, to fleet.ExecState, reason string) error {
	// Held for reading across the send so Close cannot close verdicts
	// under it; the send waits at most for runFinisher to take a batch,
	// which it does until verdicts is closed.
	c.finMu.RLock()
	if !c.finOpen {
		c.finMu.RUnlock()
		c.finish(ctx, e, to, reason)
		return nil
	}
	defer c.finMu.RUnlock()
	key := execKey{e.RolloutID, e.DeviceID}
	c.pubMu.Lock()
	if c.pendingFinish[key] {
		c.pubMu.Unlock()
		return nil
	}
	c.pendingFinish[key] = true
	c.pubMu.Unlock()
	select {
	case c.verdicts <- verdictMsg{e: e, to: to, reason: reason}:
		return nil
	case <-ctx.Done():
		c.pubMu.Lock()
		delete(c.pendingFinish, key)
		c.pubMu.Unlock()
		return fmt.Errorf("queue the verdict of rollout %d on %s: %w", e.RolloutID, e.DeviceID, ctx.Err())
	}
}

// startFinisher starts runFinisher (Start).
func (c *Controller) startFinisher() {
	c.finMu.Lock()
	defer c.finMu.Unlock()
	c.verdicts, c.finisherDone = make(chan verdictMsg, finishQueue), make(chan struct{})
	c.finOpen = true
	go c.runFinisher()
}

// stopFinisher closes verdicts and waits until runFinisher has written
// what was queued (Close, after the workers exited).
func (c *Controller) stopFinisher() {
	c.finMu.Lock()
	open := c.finOpen
	if open {
		c.finOpen = false
		close(c.verdicts)
	}
	c.finMu.Unlock()
	if open {
		<-c.finisherDone
	}
}

// finishPending reports whether a verdict of the execution is queued.
func (c *Controller) finishPending(e *fleet.Execution) bool {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return c.pendingFinish[execKey{e.RolloutID, e.DeviceID}]
}

// runFinisher is the one goroutine that writes judged executions. It
// returns once c.verdicts is closed and drained (Close).
func (c *Controller) runFinisher() {
	defer close(c.finisherDone)
	batch := make([]verdictMsg, 0, finishBatch)
	failed := 0 // consecutive batches the store refused: their devices are judged again after a growing delay
	for v := range c.verdicts {
		batch = append(batch[:0], v)
	fill:
		for len(batch) < finishBatch {
			select {
			case v, ok := <-c.verdicts:
				if !ok {
					break fill
				}
				batch = append(batch, v)
			default:
				break fill
			}
		}
		if c.writeVerdicts(batch, failed) {
			failed = 0
		} else {
			failed++
		}
	}
}

// refusedDelay is how long the devices of the failed-th consecutive refused
// batch wait before they are judged again: 500 ms doubling to 30 s, so a
// store that keeps failing (a full disk) is not hammered.
func refusedDelay(failed int) time.Duration {
	return min(500*time.Millisecond<<min(failed, 6), 30*time.Second)
}

// writeVerdicts writes one batch and does what finish does after each
// write; the engine is woken once for the batch. It reports false when the
// store refused the whole batch (failed earlier ones before it in a row).
func (c *Controller) writeVerdicts(batch []verdictMsg, failed int) bool {
	moves := make([]fleet.ExecMove, len(batch))
	for i, v := range batch {
		moves[i] = fleet.ExecMove{RolloutID: v.e.RolloutID, DeviceID: v.e.DeviceID, To: v.to, Reason: v.reason}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), finishTimeout)
	errs, err := c.store.TransitionExecutions(ctx, moves)
	cancel()
	c.pubMu.Lock()
	for i, v := range batch {
		key := execKey{v.e.RolloutID, v.e.DeviceID}
		delete(c.pendingFinish, key)
		if err == nil && errs[i] == nil {
			delete(c.startVer, key)
		}
	}
	c.pubMu.Unlock()
	if err != nil {
		c.log.Warn("judged executions not stored; judging their devices again", "executions", len(batch), "error", err)
		for _, v := range batch {
			c.queue.AddAfter(v.e.DeviceID, refusedDelay(failed)) // a no-op once the queue is shut down
		}
		return false
	}
	ended := false
	for i, v := range batch {
		if errs[i] != nil {
			c.log.Debug("execution transition refused", "rollout", v.e.RolloutID, "device", v.e.DeviceID, "to", v.to, "error", errs[i])
			continue
		}
		ended = true
		c.log.Info("execution ended", "rollout", v.e.RolloutID, "device", v.e.DeviceID, "state", v.to, "reason", v.reason)
		c.changed(rolloutSubject(v.e.RolloutID))
	}
	if ended {
		c.Kick()
	}
	return true
}
