package sqlite

import (
	"testing"
	"testing/fstest"
)

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name     string
		files    fstest.MapFS
		versions []int
		ok       bool
	}{
		{"ordered numerically", fstest.MapFS{
			"migrations/0002_b.sql": file("B"), "migrations/0001_a.sql": file("A"), "migrations/0003_c.sql": file("C"),
		}, []int{1, 2, 3}, true},
		{"gap", fstest.MapFS{"migrations/0001_a.sql": file("A"), "migrations/0003_c.sql": file("C")}, nil, false},
		{"duplicate", fstest.MapFS{"migrations/0001_a.sql": file("A"), "migrations/001_b.sql": file("B")}, nil, false},
		{"bad name", fstest.MapFS{"migrations/init.sql": file("A")}, nil, false},
		{"zero", fstest.MapFS{"migrations/0000_a.sql": file("A")}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := loadMigrations(tt.files)
			if (err == nil) != tt.ok {
				t.Fatalf("loadMigrations = %v, want ok=%v", err, tt.ok)
			}
			for i, v := range tt.versions {
				if ms[i].version != v {
					t.Errorf("migration %d has version %d, want %d", i, ms[i].version, v)
				}
			}
		})
	}
	if _, err := loadMigrations(migrationFiles); err != nil {
		t.Fatalf("embedded migrations: %v", err)
	}
}
