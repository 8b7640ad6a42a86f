package broker

import (
	"database/sql"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/packets"
)

// TestStoreMigratesWithoutRowid: a store written by an older binary, whose
// mqtt_state was a WITHOUT ROWID table (with seq, and before seq existed),
// opens as a rowid table holding the same rows: its retained messages and
// in-flight messages load unchanged and in seq order, and new writes land.
func TestStoreMigratesWithoutRowid(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		seq          bool
	}{
		{"with seq", `CREATE TABLE mqtt_state (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL,
			seq INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID`, true},
		{"before seq", `CREATE TABLE mqtt_state (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL) WITHOUT ROWID`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old := storeFile(t, dir)
			if _, err := old.Exec(tc.schema); err != nil {
				t.Fatal(err)
			}
			ret := storage.Message{ID: "RET_a/b", T: storage.RetainedKey, TopicName: "a/b", Payload: make([]byte, 3000),
				FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, Created: 7}
			ret.Payload[0] = 1
			inflight := []storage.Message{
				{ID: "IFM_c:9", T: storage.InflightKey, Client: "c", TopicName: "x", PacketID: 9},
				{ID: "IFM_c:2", T: storage.InflightKey, Client: "c", TopicName: "y", PacketID: 2},
			}
			insertOld(t, old, tc.seq, ret, 0)
			for i, m := range inflight {
				insertOld(t, old, tc.seq, m, i+1)
			}
			old.Close()

			s, err := openStore(dir, slog.New(slog.NewTextHandler(t.Output(), nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			var wr bool
			if err := s.db.QueryRow(`SELECT wr FROM pragma_table_list WHERE name = 'mqtt_state'`).Scan(&wr); err != nil || wr {
				t.Fatalf("mqtt_state WITHOUT ROWID after open = %v (%v), want a rowid table", wr, err)
			}
			rets, err := s.StoredRetainedMessages()
			if err != nil || len(rets) != 1 || rets[0].TopicName != "a/b" || len(rets[0].Payload) != 3000 || rets[0].Payload[0] != 1 || rets[0].Created != 7 {
				t.Fatalf("retained after migration = %+v, %v; want %+v", rets, err, ret)
			}
			ifs, err := s.StoredInflightMessages()
			if err != nil || len(ifs) != 2 {
				t.Fatalf("in-flight after migration = %+v, %v; want 2", ifs, err)
			}
			if tc.seq && (ifs[0].PacketID != 9 || ifs[1].PacketID != 2) {
				t.Errorf("in-flight order = %d, %d; want seq order 9, 2", ifs[0].PacketID, ifs[1].PacketID)
			}
			k := storeKey{kind: kindRetained, name: "a/b"}
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, TopicName: "a/b", Payload: []byte("new")}
			if err := s.write(map[storeKey]change{k: {value: message(k, "c", pk, 0)}}); err != nil {
				t.Fatal(err)
			}
			if rets, _ := s.StoredRetainedMessages(); len(rets) != 1 || string(rets[0].Payload) != "new" {
				t.Errorf("retained after an upsert = %+v, want the one row with payload new", rets)
			}
		})
	}
}

// insertOld writes m as an older binary did: its JSON under its row key,
// with seq n where the table has one.
func insertOld(t *testing.T, db *sql.DB, seq bool, m storage.Message, n int) {
	t.Helper()
	v, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if seq {
		_, err = db.Exec(`INSERT INTO mqtt_state(key, kind, value, seq) VALUES(?, ?, ?, ?)`, m.ID, m.T, v, n)
	} else {
		_, err = db.Exec(`INSERT INTO mqtt_state(key, kind, value) VALUES(?, ?, ?)`, m.ID, m.T, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestStorePayloadColumn: a retained message's payload is stored as
// published in the payload column, its JSON holds none, and it loads back
// byte for byte; the pending message keeps its payload after the write (a
// failed batch is written again).
func TestStorePayloadColumn(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte{0, 1, 2, 0xff, '"', '\\', 'x'}
	k := storeKey{kind: kindRetained, name: "a/b"}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, TopicName: "a/b", Payload: payload}
	c := change{value: message(k, "c", pk, 0)}
	if err := s.write(map[storeKey]change{k: c}); err != nil {
		t.Fatal(err)
	}
	if got := c.value.(*storage.Message).Payload; string(got) != string(payload) {
		t.Fatalf("pending message's payload after the write = %q, want %q", got, payload)
	}
	s.Stop()

	var value, column []byte
	if err := storeFile(t, dir).QueryRow(`SELECT value, payload FROM mqtt_state WHERE key = 'RET_a/b'`).Scan(&value, &column); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(value, &m); err != nil || m["payload"] != nil || string(column) != string(payload) {
		t.Fatalf("stored value %s (%v) and payload %q; want JSON payload null and the column %q", value, err, column, payload)
	}
	s, err = openStore(dir, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rets, err := s.StoredRetainedMessages()
	if err != nil || len(rets) != 1 || string(rets[0].Payload) != string(payload) || rets[0].TopicName != "a/b" {
		t.Fatalf("loaded %+v, %v; want a/b with payload %q", rets, err, payload)
	}
}
