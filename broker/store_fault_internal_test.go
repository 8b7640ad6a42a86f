package broker

import (
	"bytes"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// storeLog is a slog destination tests can read while the broker writes.
type storeLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *storeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *storeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// storeFile opens broker.db through a connection of its own.
func storeFile(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "broker.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func storedRetained(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT key FROM mqtt_state WHERE kind = 'RET'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got[strings.TrimPrefix(k, "RET_")] = true
	}
	return got
}

// TestStoreFullKeepsServing promises that when the broker's store cannot
// write (its database capped with max_page_count, as a full disk stops it):
// the failure is logged once, clearly; the broker keeps serving, retained
// messages included, from memory; what was stored before is intact
// (integrity_check ok) and no part of the failed batch is; once there is
// room again the held changes are written, so a restart restores every
// retained message published while the store was full.
func TestStoreFullKeepsServing(t *testing.T) {
	dir := t.TempDir()
	logs := &storeLog{}
	cfg := Config{DataDir: dir, MQTTListen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(logs, nil))}
	b, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	file := storeFile(t, dir)
	publish := func(topic string, n int) {
		t.Helper()
		if err := b.Publish(Message{Topic: topic, Payload: bytes.Repeat([]byte("x"), n), QoS: 1, Retain: true}); err != nil {
			t.Fatalf("publish %s: %v", topic, err)
		}
	}
	publish("before/full", 100)
	poll.Until(t, "the first retained message stored", 10*time.Second, func() bool { return storedRetained(t, file)["before/full"] })

	if _, err := b.store.db.Exec("PRAGMA max_page_count = 1"); err != nil { // no page beyond those it has
		t.Fatal(err)
	}
	const held = 20
	for i := range held {
		publish(fmt.Sprintf("while/full/%d", i), 4096)
	}
	poll.Until(t, "the write failure logged", 10*time.Second, func() bool { return strings.Contains(logs.String(), "broker store: write failed") })
	if l := logs.String(); !strings.Contains(l, "full") {
		t.Fatalf("the log does not say the database is full:\n%s", l)
	}

	// Still serving: a new subscriber gets the retained messages, live
	// messages flow.
	got := make(chan string, 2*held)
	unsub, err := b.Subscribe("while/#", func(m Message) { got <- m.Topic })
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	for range held {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("a retained message was not delivered while the store was full")
		}
	}
	publish("while/live", 10)
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a live message was not delivered while the store was full")
	}

	var check string
	if err := file.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	if rows := storedRetained(t, file); !rows["before/full"] || len(rows) != 1 {
		t.Fatalf("stored while full: %v; want only before/full", rows)
	}

	if _, err := b.store.db.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the held changes written", 10*time.Second, func() bool { return len(storedRetained(t, file)) == held+2 })
	poll.Until(t, "the recovery logged", 10*time.Second, func() bool { return strings.Contains(logs.String(), "broker store: write recovered") })
	b.Close()

	again, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for i := range held {
		if topic := fmt.Sprintf("while/full/%d", i); !again.HasRetained(topic) {
			t.Fatalf("%s not restored after the restart", topic)
		}
	}
}
