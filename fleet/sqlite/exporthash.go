package sqlite

import (
	"context"

	"github.com/chorus-edge/chorus/fleet"
)

// PutExportHash records or replaces the export hash of h.Username.
func (db *DB) PutExportHash(ctx context.Context, h fleet.ExportHash) error {
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO export_hashes (username, secret_hash, mosquitto, updated_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
			mosquitto = excluded.mosquitto, updated_at = excluded.updated_at`,
			h.Username, h.SecretHash, h.Mosquitto, encTime(tx.now))
		return err
	})
}

// DeleteExportHash forgets username's export hash (no error when absent).
func (db *DB) DeleteExportHash(ctx context.Context, username string) error {
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM export_hashes WHERE username = ?`, username)
		return err
	})
}

// ExportHashes returns every recorded export hash, by username.
func (db *DB) ExportHashes(ctx context.Context) (map[string]fleet.ExportHash, error) {
	out := map[string]fleet.ExportHash{}
	err := db.read(ctx, func(tx *tx) error {
		hs, err := queryAll(ctx, tx, func(s scanner) (fleet.ExportHash, error) {
			var h fleet.ExportHash
			return h, s.Scan(&h.Username, &h.SecretHash, &h.Mosquitto)
		}, `SELECT username, secret_hash, mosquitto FROM export_hashes`)
		for _, h := range hs {
			out[h.Username] = h
		}
		return err
	})
	return out, err
}
