package configs

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// examples are the example skills, built into the binary so `chorus up`
// works from any directory.
//
//go:embed skills
var examples embed.FS

// ExampleSkillsDir is where the example skills live in a source checkout.
const ExampleSkillsDir = "configs/skills"

// ExtractExamples writes the example skills under dir (replacing earlier
// copies) and returns the root to scan. Scripts (*.sh) are made executable.
func ExtractExamples(dir string) (string, error) {
	root := filepath.Join(dir, "skills")
	if err := os.RemoveAll(root); err != nil {
		return "", fmt.Errorf("extract example skills: %w", err)
	}
	err := fs.WalkDir(examples, "skills", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := examples.ReadFile(path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(path, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(target, b, mode)
	})
	if err != nil {
		return "", fmt.Errorf("extract example skills: %w", err)
	}
	return root, nil
}
