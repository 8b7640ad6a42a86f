package main

import (
	"slices"
	"testing"

	"github.com/chorus-edge/chorus/broker"
)

func TestDesiredSkillUsers(t *testing.T) {
	for _, c := range []struct {
		name, topic, payload string
		want                 []string
	}{
		{"two skills", "chorus/v1/pi-1/desired", `{"version":3,"skills":{"b.two":{},"a.one":{}}}`,
			[]string{"skill:pi-1:a.one", "skill:pi-1:b.two"}},
		{"no skills", "chorus/v1/pi-1/desired", `{"version":1,"skills":{}}`, nil},
		{"cleared", "chorus/v1/pi-1/desired", ``, nil},
		{"another topic", "chorus/v1/pi-1/skills", `{"skills":{"a.one":{}}}`, nil},
		{"not JSON", "chorus/v1/pi-1/desired", `{`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := desiredSkillUsers(broker.Message{Topic: c.topic, Payload: []byte(c.payload)})
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
