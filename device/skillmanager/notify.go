package skillmanager

import "sync"

// notifier calls OnChange from one goroutine. poke never blocks: pokes that
// arrive while a call runs are coalesced into one more call, which reads the
// state afresh, so the last call always reflects the latest change.
type notifier struct {
	snapshot func() Snapshot
	onChange func(Snapshot)
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	startMu  sync.Mutex
	started  bool
}

func newNotifier(snapshot func() Snapshot, onChange func(Snapshot)) *notifier {
	return &notifier{snapshot: snapshot, onChange: onChange, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (n *notifier) start() {
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if n.started {
		return
	}
	n.started = true
	go n.run()
}

func (n *notifier) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.kick:
			n.call()
		case <-n.stop:
			n.call() // the final state (status stopping, skills stopped)
			return
		}
	}
}

func (n *notifier) call() {
	if n.onChange != nil {
		n.onChange(n.snapshot())
	}
}

// close makes the final call and waits for the goroutine. Idempotent; a
// notifier never started is closed at once.
func (n *notifier) close() {
	n.startMu.Lock()
	started := n.started
	n.started = true // a later start is a no-op
	n.startMu.Unlock()
	n.once.Do(func() { close(n.stop) })
	if started {
		<-n.done
	}
}
