//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSubcommandTypo: a mistyped subcommand at any depth is an error that
// names the closest subcommand and exits non-zero; a group alone prints
// its help and exits 0 (issue 16 §8).
func TestSubcommandTypo(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		want       string
		wantStdout string
	}{
		{args: []string{"fleet", "instal"}, code: 1, want: `unknown command "instal" for "chorus fleet"; did you mean "install"?`},
		{args: []string{"bus", "lisen"}, code: 1, want: `unknown command "lisen" for "chorus bus"; did you mean "listen"?`},
		{args: []string{"fleet", "device", "lst"}, code: 1, want: `did you mean "list"?`},
		{args: []string{"skil"}, code: 1, want: `did you mean "skill"?`},
		{args: []string{"fleet", "zzzzzz"}, code: 1, want: `unknown command "zzzzzz" for "chorus fleet" (run 'chorus fleet --help'`},
		{args: []string{"fleet"}, code: 0, wantStdout: "Available Commands:"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			a := newApp(&out, &errOut, func(string) string { return "" })
			code := a.execute(context.Background(), tc.args)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", errOut.String(), tc.want)
			}
			if !strings.Contains(out.String(), tc.wantStdout) {
				t.Fatalf("stdout %q lacks %q", out.String(), tc.wantStdout)
			}
		})
	}
}
