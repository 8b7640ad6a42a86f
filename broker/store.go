package broker

import (
	"github.com/chorus-edge/chorus/gateway/privatedb"

	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// store persists retained messages and persistent sessions (clients,
// subscriptions, in-flight QoS messages) in SQLite under the data dir, so they
// survive a broker restart. mochi ships no SQLite hook; SQLite is already the
// fleet's store, so one more engine (bolt, badger) would only add weight.
//
// Hooks run on client goroutines, so they never touch the database and do no
// encoding: they record the latest change per key in pending (the packet or
// struct itself, not its JSON), and one writer goroutine encodes and flushes
// pending in a transaction every flushEvery. Changes to one key coalesce (an
// in-flight message acknowledged within the window is one DELETE, never
// encoded), so memory is bounded by the number of distinct keys. Close
// flushes what is left.
//
// Only sessions that outlive their connection are stored: a clean session
// (MQTT 5 session expiry 0, or MQTT 3 clean session) cannot be resumed after
// a restart, so its client record and its in-flight messages are never written,
// not even by a delivery mochi makes after the client disconnected
// (store_session.go).
type store struct {
	mqtt.HookBase
	db  *sql.DB
	log *slog.Logger

	// conn holds the kind of each connected, established client
	// (store_session.go); mochi may change a client's session expiry on its
	// own goroutine (DISCONNECT), so it is decided once and not read again
	// from other goroutines.
	conn clientMap[sessionKind]

	// mu guards pending, stopped and clients. Nothing under it does I/O.
	mu      sync.Mutex
	pending map[storeKey]change // latest change per key
	// stopped holds the clients whose session stores nothing (clean, or
	// ended), for as long as the client object lives (store_session.go).
	stopped map[weak.Pointer[mqtt.Client]]sessionKind
	// clients holds the ids with a stored client record or a pending one:
	// loaded at start, kept by putLocked.
	clients map[string]struct{}
	seq     uint64 // the last seq given to an in-flight row

	failed  int                    // consecutive failed writes (writer goroutine only)
	lastErr atomic.Pointer[string] // the failing write's error, for Health; nil when writes succeed

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// storeKey identifies one stored row without building its string on the
// packet path; key() renders the row key mochi's storage layout uses.
type storeKey struct {
	kind   byte   // kindClient, kindSubscription, kindRetained, kindInflight
	id     uint16 // packet id (in-flight)
	client string // client id (client, subscription, in-flight)
	name   string // filter (subscription) or topic (retained)
}

const (
	kindClient byte = iota + 1
	kindSubscription
	kindRetained
	kindInflight
)

func (k storeKey) kindName() string {
	switch k.kind {
	case kindClient:
		return storage.ClientKey
	case kindSubscription:
		return storage.SubscriptionKey
	case kindRetained:
		return storage.RetainedKey
	default:
		return storage.InflightKey
	}
}

// key is the row key: CL_<id>, SUB_<id>:<filter>, RET_<topic>, IFM_<id>:<packet id>.
func (k storeKey) key() string {
	switch k.kind {
	case kindClient:
		return storage.ClientKey + "_" + k.client
	case kindSubscription:
		return storage.SubscriptionKey + "_" + k.client + ":" + k.name
	case kindRetained:
		return storage.RetainedKey + "_" + k.name
	default:
		return storage.InflightKey + "_" + k.client + ":" + strconv.FormatUint(uint64(k.id), 10)
	}
}

// change is a pending write: del, or a value the writer encodes as JSON:
// *storage.Client, *storage.Subscription, or *storage.Message (a retained
// or in-flight message, built by message on the hook's goroutine without
// its row key, which the writer fills in). A message holds the packet's
// payload and property slices, which mochi never mutates once decoded
// (every read gets fresh buffers). Holding the storage form, not the
// packets.Packet (~800 bytes, which put every pending change in a map slot
// of its own, 896 bytes: `putLocked` 5 MB in the 10,000-device heap
// profile), keeps a change within its map slot and its message in 256 bytes.
type change struct {
	del   bool
	value any
	seq   uint64 // in-flight order (storeSchema)
}

const flushEvery = 50 * time.Millisecond

// seq orders in-flight messages: it is set when a row is first written and
// kept when the row is updated, and rows load in seq order, so a session
// restored after a restart is resent in the order it was published. (Keys
// sort by packet id, which wraps, and as text.)
//
// The table has a rowid, and key's uniqueness lives in an index of its own:
// in a WITHOUT ROWID table the whole row is the primary key's b-tree entry,
// and an entry over ~1 KB (a 4 KiB page's index maximum) spills to
// overflow pages that every key comparison of a lookup reads, so each
// upsert of a retained Home Assistant document or skills report read
// several overflow pages (~0.5 s of 16 s of gateway CPU in a 10,000-device
// install, docs/benchmarks.md). A rowid table keeps a row of up to ~4 KB
// in its leaf, and lookups compare only the index's short keys.
//
// A message's payload is stored as it was published, in payload, and its
// JSON value holds "payload":null: in the JSON, encoding/json wrote it as
// base64, a third larger, and encoding it was a fifth of the writer's CPU
// (BenchmarkStoreRetainedRewrite). A row written before payload existed
// has it NULL and its payload in the JSON, which load reads as before.
const storeSchema = `CREATE TABLE IF NOT EXISTS mqtt_state (
	key     TEXT PRIMARY KEY,
	kind    TEXT NOT NULL,
	value   BLOB NOT NULL,
	seq     INTEGER NOT NULL DEFAULT 0,
	payload BLOB
)`

// migrateStore brings a store made by an older binary to storeSchema: it
// adds seq to one made before seq existed, copies one made WITHOUT
// ROWID into a rowid table (one transaction: a crash leaves the old table
// whole), and adds payload. It returns the largest seq stored.
func migrateStore(db *sql.DB) (uint64, error) {
	if err := addColumn(db, "seq", "INTEGER NOT NULL DEFAULT 0"); err != nil {
		return 0, err
	}
	if err := dropWithoutRowid(db); err != nil {
		return 0, err
	}
	if err := addColumn(db, "payload", "BLOB"); err != nil {
		return 0, err
	}
	var top uint64
	err := db.QueryRow(`SELECT COALESCE(MAX(seq), 0) FROM mqtt_state`).Scan(&top)
	return top, err
}

// addColumn adds column name (type and constraints def) to a mqtt_state
// made before it existed.
func addColumn(db *sql.DB, name, def string) error {
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('mqtt_state') WHERE name = ?`, name).Scan(&n); err != nil || n > 0 {
		return err
	}
	_, err := db.Exec(`ALTER TABLE mqtt_state ADD COLUMN ` + name + ` ` + def)
	return err
}

// dropWithoutRowid rebuilds a WITHOUT ROWID mqtt_state as storeSchema's
// rowid table, rows unchanged.
func dropWithoutRowid(db *sql.DB) error {
	var wr bool
	if err := db.QueryRow(`SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = 'mqtt_state'`).Scan(&wr); err != nil || !wr {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`ALTER TABLE mqtt_state RENAME TO mqtt_state_without_rowid`,
		storeSchema,
		`INSERT INTO mqtt_state(key, kind, value, seq) SELECT key, kind, value, seq FROM mqtt_state_without_rowid`,
		`DROP TABLE mqtt_state_without_rowid`,
	} {
		if _, err := tx.Exec(q); err != nil {
			return fmt.Errorf("rebuild mqtt_state with a rowid: %w", err)
		}
	}
	return tx.Commit()
}

func openStore(dir string, log *slog.Logger) (*store, error) {
	path := filepath.Join(dir, "broker.db")
	if err := privatedb.Prepare(path); err != nil {
		return nil, fmt.Errorf("open broker store: %w", err)
	}
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
	top, err := migrateStore(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open broker store %s: %w", path, err)
	}
	s := &store{
		db: db, log: log, seq: top,
		pending: make(map[storeKey]change),
		stopped: make(map[weak.Pointer[mqtt.Client]]sessionKind),
		clients: make(map[string]struct{}),
		kick:    make(chan struct{}, 1), done: make(chan struct{}),
	}
	s.wg.Add(1)
	go s.writer()
	return s, nil
}

func (s *store) ID() string { return "chorus-store" }

// Provides is asked for every event of every client, so it is a switch
// rather than a search.
func (s *store) Provides(b byte) bool {
	switch b {
	case mqtt.OnSessionEstablish, mqtt.OnSessionEstablished, mqtt.OnDisconnect, mqtt.OnSubscribed, mqtt.OnUnsubscribed,
		mqtt.OnRetainMessage, mqtt.OnWillSent, mqtt.OnQosPublish, mqtt.OnQosComplete,
		mqtt.OnQosDropped, mqtt.OnClientExpired, mqtt.OnRetainedExpired,
		mqtt.StoredClients, mqtt.StoredSubscriptions, mqtt.StoredInflightMessages, mqtt.StoredRetainedMessages:
		return true
	}
	return false
}

func (s *store) put(k storeKey, c change) {
	s.mu.Lock()
	s.putLocked(k, c)
	s.mu.Unlock()
	s.wake()
}

func (s *store) del(k storeKey) { s.put(k, change{del: true}) }

// putLocked records c as the latest change of k; s.mu is held.
func (s *store) putLocked(k storeKey, c change) {
	if k.kind == kindInflight && !c.del {
		if old, ok := s.pending[k]; ok && !old.del {
			c.seq = old.seq // an update keeps its place
		} else {
			s.seq++
			c.seq = s.seq
		}
	}
	s.pending[k] = c
	if k.kind != kindClient {
		return
	}
	if c.del {
		delete(s.clients, k.client)
	} else {
		s.clients[k.client] = struct{}{}
	}
}

// wake tells the writer there is something to flush.
func (s *store) wake() {
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
			s.final()
			return
		case <-s.kick:
		}
		s.flush()
		select { // batch what arrives in the next moment
		case <-s.done:
			s.final()
			return
		case <-time.After(s.pause()):
		}
	}
}

func (s *store) flush() {
	s.mu.Lock()
	batch := s.pending
	if len(batch) == 0 {
		s.mu.Unlock()
		return // pending stays the hooks' map: not read here after the unlock
	}
	s.pending = make(map[storeKey]change, len(batch)/2)
	s.mu.Unlock()
	if err := s.write(batch); err != nil {
		s.requeue(batch)
		msg := err.Error()
		s.lastErr.Store(&msg)
		if s.failed++; s.failed == 1 {
			s.log.Error("broker store: write failed; retained messages and sessions are kept in memory and the write is retried",
				"rows", len(batch), "retry_every", retryEvery, "error", err)
		}
		return
	}
	if s.failed > 0 {
		s.log.Info("broker store: write recovered", "failed_attempts", s.failed)
		s.failed = 0
		s.lastErr.Store(nil)
	}
}

// retryEvery paces the writer while writes fail (a full disk or database, a
// lock held past the busy timeout).
const retryEvery = time.Second

// requeue puts a batch that failed back into pending, under the changes
// made since, which are newer: nothing is lost while the store cannot
// write, and memory stays bounded by the number of distinct keys.
func (s *store) requeue(batch map[storeKey]change) {
	s.mu.Lock()
	for k, c := range batch {
		if _, newer := s.pending[k]; !newer {
			s.pending[k] = c
		}
	}
	s.mu.Unlock()
	s.wake()
}

// pause is how long the writer waits between flushes.
func (s *store) pause() time.Duration {
	if s.failed > 0 {
		return retryEvery
	}
	return flushEvery
}

// final is the last flush, at Stop; what it cannot write is lost and said so.
func (s *store) final() {
	s.flush()
	if s.failed > 0 {
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		s.log.Error("broker store: closed with changes it could not write", "rows", n)
	}
}

func (s *store) write(batch map[storeKey]change) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var upsert, remove *sql.Stmt
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for k, c := range batch {
		if c.del {
			if remove == nil {
				if remove, err = tx.Prepare(`DELETE FROM mqtt_state WHERE key = ?`); err != nil {
					return err
				}
			}
			if _, err := remove.Exec(k.key()); err != nil {
				return err
			}
			continue
		}
		buf.Reset()
		key := k.key()
		payload, err := encode(enc, key, c)
		if err != nil {
			s.log.Error("broker store: encode", "key", key, "error", err)
			continue
		}
		if upsert == nil {
			if upsert, err = tx.Prepare(`INSERT INTO mqtt_state(key, kind, value, seq, payload) VALUES(?, ?, ?, ?, ?)
				ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, value = excluded.value, payload = excluded.payload`); err != nil {
				return err
			}
		}
		if _, err := upsert.Exec(key, k.kindName(), bytes.TrimSuffix(buf.Bytes(), []byte("\n")), int64(c.seq), payload); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// encode writes the JSON stored for a change under the row key (mochi's
// storage types) to enc and returns what goes in the payload column: a
// message's payload, which its JSON leaves out (storeSchema), or nil.
func encode(enc *json.Encoder, key string, c change) ([]byte, error) {
	m, ok := c.value.(*storage.Message)
	if !ok {
		return nil, enc.Encode(c.value)
	}
	// Only the writer reads a pending message, so it can set the key and
	// hide the payload while encoding; the payload is put back, as a
	// failed batch is requeued and written again.
	m.ID = key
	payload := m.Payload
	m.Payload = nil
	err := enc.Encode(m)
	m.Payload = payload
	return payload, err
}

// Stop flushes pending writes and closes the database; mochi calls it from Close.
func (s *store) Stop() error {
	close(s.done)
	s.wg.Wait()
	return s.db.Close()
}

// failure returns the error the writer is retrying, or "".
func (s *store) failure() string {
	if e := s.lastErr.Load(); e != nil {
		return *e
	}
	return ""
}
