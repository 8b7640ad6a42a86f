// Package examples holds the example skills that ship with Chorus
// (configs/skills/*.chorus), run as `chorus skill example NAME`. They show
// the skillkit API and give tests and demos real skills that need no build
// step. None of them touches the network beyond the device's bus.
package examples

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/chorus-edge/chorus/device/skillkit"
)

// setups maps an example's name to its setup. A function, not a package
// variable, so nothing is shared between runs.
func setups() map[string]func(*skillkit.Skill) error {
	return map[string]func(*skillkit.Skill) error{
		"hello":    setupHello,
		"weather":  setupWeather,
		"screen":   setupScreen,
		"echo-hub": setupEchoHub,
	}
}

// Names lists the example skills, sorted.
func Names() []string {
	var names []string
	for n := range setups() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run runs the example skill name until ctx ends or the agent stops it
// (skillkit.RunConfig).
func Run(ctx context.Context, name string, cfg skillkit.Config) error {
	setup, ok := setups()[name]
	if !ok {
		return fmt.Errorf("example skill %q: unknown (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return skillkit.RunConfig(ctx, cfg, setup)
}
