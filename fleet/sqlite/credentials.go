package sqlite

import (
	"context"
	"encoding/json"

	"github.com/chorus-edge/chorus/fleet"
)

// CreateIntegration adds an integration credential; Allow is sorted and
// de-duplicated. A taken name is ErrConflict.
func (db *DB) CreateIntegration(ctx context.Context, i *fleet.Integration) error {
	if err := i.Validate(); err != nil {
		return err
	}
	i.Allow = fleet.NormalizeTags(i.Allow)
	allow, err := jsonText(i.Allow)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO integrations (name, secret_hash, allow, created_at) VALUES (?, ?, ?, ?)`,
			i.Name, i.SecretHash, allow, encTime(tx.now))
		if err != nil {
			return conflictOr(err, "integration %q already exists", i.Name)
		}
		i.CreatedAt = tx.now
		return nil
	})
}

// GetIntegration returns one integration.
func (db *DB) GetIntegration(ctx context.Context, name string) (*fleet.Integration, error) {
	if err := fleet.ValidName("integration", name); err != nil {
		return nil, err
	}
	var i *fleet.Integration
	err := db.read(ctx, func(tx *tx) (err error) {
		i, err = scanIntegration(tx.QueryRowContext(ctx, `SELECT name, secret_hash, allow, created_at FROM integrations WHERE name = ?`, name))
		return notFoundOr(err, "integration %q not found", name)
	})
	return i, err
}

// ListIntegrations returns every integration by name.
func (db *DB) ListIntegrations(ctx context.Context) ([]*fleet.Integration, error) {
	var out []*fleet.Integration
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanIntegration, `SELECT name, secret_hash, allow, created_at FROM integrations ORDER BY name`)
		return err
	})
	return out, err
}

// DeleteIntegration removes an integration credential.
func (db *DB) DeleteIntegration(ctx context.Context, name string) error {
	if err := fleet.ValidName("integration", name); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM integrations WHERE name = ?`, name)
		return affected(res, err, "integration %q not found", name)
	})
}

func scanIntegration(s scanner) (*fleet.Integration, error) {
	var (
		i       fleet.Integration
		allow   string
		created int64
	)
	if err := s.Scan(&i.Name, &i.SecretHash, &allow, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(allow), &i.Allow); err != nil {
		return nil, err
	}
	if i.Allow == nil {
		i.Allow = []string{}
	}
	i.CreatedAt = decTime(created)
	return &i, nil
}

// CreateOperator adds an operator credential. A taken name is ErrConflict.
func (db *DB) CreateOperator(ctx context.Context, o *fleet.Operator) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO operators (name, secret_hash, created_at) VALUES (?, ?, ?)`,
			o.Name, o.SecretHash, encTime(tx.now))
		if err != nil {
			return conflictOr(err, "operator %q already exists", o.Name)
		}
		o.CreatedAt = tx.now
		return nil
	})
}

// GetOperator returns one operator.
func (db *DB) GetOperator(ctx context.Context, name string) (*fleet.Operator, error) {
	if err := fleet.ValidName("operator", name); err != nil {
		return nil, err
	}
	var o *fleet.Operator
	err := db.read(ctx, func(tx *tx) (err error) {
		o, err = scanOperator(tx.QueryRowContext(ctx, `SELECT name, secret_hash, created_at FROM operators WHERE name = ?`, name))
		return notFoundOr(err, "operator %q not found", name)
	})
	return o, err
}

// ListOperators returns every operator by name.
func (db *DB) ListOperators(ctx context.Context) ([]*fleet.Operator, error) {
	var out []*fleet.Operator
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanOperator, `SELECT name, secret_hash, created_at FROM operators ORDER BY name`)
		return err
	})
	return out, err
}

// DeleteOperator removes an operator credential.
func (db *DB) DeleteOperator(ctx context.Context, name string) error {
	if err := fleet.ValidName("operator", name); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM operators WHERE name = ?`, name)
		return affected(res, err, "operator %q not found", name)
	})
}

func scanOperator(s scanner) (*fleet.Operator, error) {
	var (
		o       fleet.Operator
		created int64
	)
	if err := s.Scan(&o.Name, &o.SecretHash, &created); err != nil {
		return nil, err
	}
	o.CreatedAt = decTime(created)
	return &o, nil
}
