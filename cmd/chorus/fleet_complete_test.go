//go:build !chorus_agent

package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFleetCompletion: shell completion offers the gateway's device, skill
// and rollout ids, filtered by what was typed (issue 16 §8). It runs the
// hidden __complete command the shell scripts of `chorus completion` call.
func TestFleetCompletion(t *testing.T) {
	t.Parallel()
	g := startFleetGateway(t)
	env := g.front(t).env()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"fleet", "device", "show", ""}, []string{"hall", "kitchen"}},
		{[]string{"fleet", "device", "rm", "k"}, []string{"kitchen"}},
		{[]string{"fleet", "install", "wea"}, []string{"weather.chorus"}},
		{[]string{"fleet", "skill", "show", ""}, []string{"hello.chorus", "weather.chorus"}},
		{[]string{"fleet", "rollout", "show", ""}, []string{strconv.FormatInt(g.rollout, 10)}},
		{[]string{"fleet", "install", "hello.chorus", "--device", "h"}, []string{"hall"}},
		{[]string{"fleet", "device", "show", "kitchen", ""}, nil}, // one id only
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := chorus(fleetCtx(t), env, append([]string{"__complete"}, tc.args...)...)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if line != "" && !strings.HasPrefix(line, ":") {
					got = append(got, strings.SplitN(line, "\t", 2)[0])
				}
			}
			slices.Sort(got)
			if r.code != 0 || !slices.Equal(got, tc.want) {
				t.Fatalf("exit %d, completions %q, want %q\nstdout %q stderr %q", r.code, got, tc.want, r.stdout, r.stderr)
			}
		})
	}
}
