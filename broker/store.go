package broker

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// store persists retained messages and persistent sessions (clients,
// subscriptions, in-flight QoS messages) in SQLite under the data dir, so they
// survive a broker restart. mochi ships no SQLite hook; SQLite is already the
// fleet's store, so one more engine (bolt, badger) would only add weight.
//
// Hooks run on client goroutines, so they never touch the database: they
// record the latest value per key in pending, and one writer goroutine flushes
// pending in a transaction every flushEvery. Writes to one key coalesce, so
// memory is bounded by the number of distinct keys. Close flushes what is left.
type store struct {
	mqtt.HookBase
	db  *sql.DB
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]*row // key -> latest value; nil value = delete

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

type row struct {
	kind  string
	value []byte // nil deletes the key
}

const flushEvery = 50 * time.Millisecond

const storeSchema = `CREATE TABLE IF NOT EXISTS mqtt_state (
	key   TEXT PRIMARY KEY,
	kind  TEXT NOT NULL,
	value BLOB NOT NULL
) WITHOUT ROWID`

func openStore(dir string, log *slog.Logger) (*store, error) {
	path := filepath.Join(dir, "broker.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open broker store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open broker store %s: %w", path, err)
	}
	s := &store{db: db, log: log, pending: make(map[string]*row), kick: make(chan struct{}, 1), done: make(chan struct{})}
	s.wg.Add(1)
	go s.writer()
	return s, nil
}

func (s *store) ID() string { return "chorus-store" }

func (s *store) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mqtt.OnSessionEstablished, mqtt.OnDisconnect, mqtt.OnSubscribed, mqtt.OnUnsubscribed,
		mqtt.OnRetainMessage, mqtt.OnWillSent, mqtt.OnQosPublish, mqtt.OnQosComplete,
		mqtt.OnQosDropped, mqtt.OnClientExpired, mqtt.OnRetainedExpired,
		mqtt.StoredClients, mqtt.StoredSubscriptions, mqtt.StoredInflightMessages, mqtt.StoredRetainedMessages,
	}, []byte{b})
}

func (s *store) set(key, kind string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("broker store: encode", "key", key, "error", err)
		return
	}
	s.put(key, &row{kind: kind, value: b})
}

func (s *store) del(key string) { s.put(key, &row{}) }

func (s *store) put(key string, r *row) {
	s.mu.Lock()
	s.pending[key] = r
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// writer owns the database writes.
func (s *store) writer() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			s.flush()
			return
		case <-s.kick:
		}
		s.flush()
		select { // batch what arrives in the next moment
		case <-s.done:
			s.flush()
			return
		case <-time.After(flushEvery):
		}
	}
}

func (s *store) flush() {
	s.mu.Lock()
	batch := s.pending
	s.pending = make(map[string]*row)
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := s.write(batch); err != nil {
		s.log.Error("broker store: write", "rows", len(batch), "error", err)
	}
}

func (s *store) write(batch map[string]*row) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for key, r := range batch {
		if r.value == nil {
			_, err = tx.Exec(`DELETE FROM mqtt_state WHERE key = ?`, key)
		} else {
			_, err = tx.Exec(`INSERT INTO mqtt_state(key, kind, value) VALUES(?, ?, ?)
				ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, value = excluded.value`, key, r.kind, r.value)
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Stop flushes pending writes and closes the database; mochi calls it from Close.
func (s *store) Stop() error {
	close(s.done)
	s.wg.Wait()
	return s.db.Close()
}
