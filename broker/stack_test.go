package broker_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// TestIdleDeviceStacksShrink: devices connect through Chorus's listener,
// each publishes a bus message to itself and receives it (which grows the
// stack of the goroutine handling its packets to 4–8 KiB), and once they
// are idle each waits for its next packet on a goroutine that has handled
// none (the listener's connection.continueReads, the fork's ReadContinuer):
// 2 KiB of stack each, the size a goroutine starts with. On one goroutine a
// connection kept 4 KiB at best (the runtime halves a stack only when less
// than a quarter of it is in use; docs/benchmarks.md, broker memory round
// three), 8 KiB before the listener's frames were flattened and 16 KiB
// before the fork's stack patch. Under -race the runtime's stack guard is
// doubled and frames are larger: 4 KiB there (8 KiB on one goroutine).
func TestIdleDeviceStacksShrink(t *testing.T) {
	const devices = 200
	var accounts []broker.Account
	var secrets []string
	for i := range devices {
		d := brokertest.NewDevice(t, fmt.Sprintf("stack%d", i))
		accounts = append(accounts, d.Account)
		secrets = append(secrets, d.Secret)
	}
	b := brokertest.Start(t, brokertest.Unlimited(), accounts...)

	before := goroutineStackBytes()
	for i := range devices {
		id := fmt.Sprintf("stack%d", i)
		c := brokertest.DialRaw(t, b.Addr())
		c.MustConnect(brokertest.RawConnect{ClientID: id, Username: id, Password: secrets[i], Clean: true})
		topic := "chorus/v1/" + id + "/bus/speak"
		c.Subscribe(1, topic)
		c.Publish(topic, []byte(`{"type":"speak","data":{"utterance":"hi"},"context":{}}`), 1, 2, packets.Properties{})
		c.Expect(packets.Publish, 20*time.Second)
	}

	var perDevice int64
	for i := range 6 { // each collection halves a stack at most once
		runtime.GC()
		perDevice = (goroutineStackBytes() - before) / devices
		t.Logf("after collection %d: %d stack bytes per connection", i+1, perDevice)
	}
	limit := int64(2560) // 2 KiB stacks and the measurement's noise; 4 KiB stacks measure 3.5 KiB and up
	if raceDetector {
		limit = 5 << 10 // 4 KiB stacks and the noise; 8 KiB on one goroutine
	}
	if perDevice > limit {
		t.Errorf("goroutine stack bytes per idle device connection: %d, want at most %d", perDevice, limit)
	}
}

func goroutineStackBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
