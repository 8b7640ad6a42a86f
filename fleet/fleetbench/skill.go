package fleetbench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/gateway/artifact"
)

// SkillArchive writes a trivial skill (SKILL.md and a run.sh that sleeps,
// ready on start) under dir and returns its packed archive, the format
// `chorus fleet skill publish` uploads. pad adds that many bytes of data to
// the skill, to give the artifact a size.
func SkillArchive(dir, id, version string, pad int) ([]byte, error) {
	sd := filepath.Join(dir, id)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return nil, err
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: A skill that does nothing, for chorus bench.\nversion: %s\nexec: run.sh\nready: on-start\n---\n\nBenchmark skill.\n", id, version)
	files := map[string]struct {
		data string
		mode os.FileMode
	}{
		"SKILL.md": {md, 0o644},
		"run.sh":   {"#!/bin/sh\nexec sleep 100000\n", 0o755},
	}
	if pad > 0 {
		files["data.bin"] = struct {
			data string
			mode os.FileMode
		}{string(bytes.Repeat([]byte("chorus bench padding\n"), pad/21+1)[:pad]), 0o644}
	}
	for name, f := range files {
		if err := os.WriteFile(filepath.Join(sd, name), []byte(f.data), f.mode); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if _, err := artifact.Pack(sd, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
