package configs

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// WriteFileAtomic creates path's directory (0700) when missing and replaces
// path with data through gateway/atomicfile (durable, all or nothing).
// Secrets files pass mode 0600.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, mode)
}
