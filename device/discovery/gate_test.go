package discovery

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestVerifyExec(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, d string)
		want   string // "" means no error
	}{
		{"unchanged", func(t *testing.T, d string) {}, ""},
		{"rewritten with same bytes", func(t *testing.T, d string) { write(t, filepath.Join(d, "run.sh"), script, 0o755) }, ""},
		{"modified", func(t *testing.T, d string) {
			write(t, filepath.Join(d, "run.sh"), script+"rm -rf /\n", 0o755)
		}, "changed since discovery; rescan to accept"},
		{"symlink retargeted in dir", func(t *testing.T, d string) {
			write(t, filepath.Join(d, "other.sh"), "#!/bin/sh\n", 0o755)
			os.Remove(filepath.Join(d, "start"))
			symlink(t, "other.sh", filepath.Join(d, "start"))
		}, "changed since discovery; rescan to accept"},
		{"removed", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "run.sh")) }, "exec not found"},
		{"no longer executable", func(t *testing.T, d string) { os.Chmod(filepath.Join(d, "run.sh"), 0o644) }, "exec not executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mkSkill(t, t.TempDir(), "a", doc("", "exec: start"))
			symlink(t, "run.sh", filepath.Join(d, "start"))
			s := loadSkill(d)
			if !s.Valid {
				t.Fatalf("invalid: %s", s.Invalid)
			}
			tt.change(t, d)
			err := s.VerifyExec()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("VerifyExec: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("VerifyExec err = %v, want %q", err, tt.want)
			}
			if strings.Contains(tt.want, "changed") && !errors.Is(err, ErrChanged) {
				t.Errorf("err %v does not wrap ErrChanged", err)
			}
		})
	}
}

func TestVerifyExecInvalidSkill(t *testing.T) {
	s := loadSkill(mkSkill(t, t.TempDir(), "a", doc("", "name: a")))
	if err := s.VerifyExec(); err == nil || !strings.Contains(err.Error(), "no exec") {
		t.Fatalf("VerifyExec of an invalid skill = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	base := t.TempDir()
	d := mkSkill(t, base, "a", okDoc("a"))
	write(t, filepath.Join(d, "docs", "x.md"), "inside", 0o644)
	write(t, filepath.Join(base, "secret"), "outside", 0o644)
	write(t, filepath.Join(d, "big"), strings.Repeat("x", MaxReadSize+1), 0o644)
	write(t, filepath.Join(d, "max"), strings.Repeat("x", MaxReadSize), 0o644)
	symlink(t, "docs/x.md", filepath.Join(d, "in-link"))
	symlink(t, filepath.Join(d, "docs", "x.md"), filepath.Join(d, "abs-in-link"))
	symlink(t, "../secret", filepath.Join(d, "out-link"))
	symlink(t, filepath.Join(base, "secret"), filepath.Join(d, "abs-out-link"))
	symlink(t, base, filepath.Join(d, "out-dir"))
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel  string
		want string // content, when err is nil
		err  error
	}{
		{"docs/x.md", "inside", nil},
		{"docs/../docs/x.md", "inside", nil},
		{"in-link", "inside", nil},
		{"abs-in-link", "inside", nil},
		{"max", strings.Repeat("x", MaxReadSize), nil},
		{"../secret", "", ErrEscapes},
		{"docs/../../secret", "", ErrEscapes},
		{filepath.Join(base, "secret"), "", ErrEscapes},
		{"out-link", "", ErrEscapes},
		{"abs-out-link", "", ErrEscapes},
		{"out-dir/secret", "", ErrEscapes},
		{"big", "", ErrTooLarge},
		{"docs", "", ErrNotRegular},
		{"fifo", "", ErrNotRegular},
		{"missing", "", fs.ErrNotExist},
		{"", "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, err := ReadFile(d, tt.rel)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("ReadFile err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("ReadFile = %.20q, %v; want %.20q", got, err, tt.want)
			}
		})
	}
}
