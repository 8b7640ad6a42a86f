package localauth

import (
	"errors"
	"fmt"
	"github.com/chorus-edge/chorus/configs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-edge/chorus/broker"
)

// TokenFile is the operator token's file in the data dir (docs/api.md).
const TokenFile = "operator-token"

// OperatorToken returns the HTTP API's operator token, creating it (mode
// 0600) at the gateway's first start.
func OperatorToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, TokenFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read operator token: %w", err)
	}
	tok, err := broker.NewSecret()
	if err != nil {
		return "", err
	}
	if err := configs.WriteFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("operator token: %w", err)
	}
	return tok, nil
}
