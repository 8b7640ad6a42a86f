package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeInstallAndCredentials: the README says in one line how to get
// the chorus command, and writes no credentials file into the checkout
// (issue 16 §8).
func TestReadmeInstallAndCredentials(t *testing.T) {
	readme := readDoc(t, "../../README.md")
	if !strings.Contains(readme, "`go install ./cmd/chorus`") {
		t.Error("README: no one-line way to build and install chorus")
	}
	flag := regexp.MustCompile(`--credentials-(?:out|dir) (\S+)`)
	for _, m := range flag.FindAllStringSubmatch(readme, -1) {
		if !strings.HasPrefix(m[1], "~/") && !strings.HasPrefix(m[1], "/") {
			t.Errorf("README writes credentials to %s, inside the working directory (a git checkout)", m[1])
		}
	}
}

// TestInstallDocPublishesBeforeInstalling: docs/install.md never installs
// a skill it has not published (issue 16 §8).
func TestInstallDocPublishesBeforeInstalling(t *testing.T) {
	doc := readDoc(t, "../../docs/install.md")
	published := map[string]bool{}
	publish := regexp.MustCompile(`chorus fleet skill publish \S*/([A-Za-z0-9._-]+)`)
	install := regexp.MustCompile(`chorus fleet install ([A-Za-z0-9._-]+)`)
	for i, line := range strings.Split(doc, "\n") {
		if m := publish.FindStringSubmatch(line); m != nil {
			published[m[1]] = true
		}
		if m := install.FindStringSubmatch(line); m != nil && !published[m[1]] {
			t.Errorf("docs/install.md line %d installs %s before publishing it", i+1, m[1])
		}
	}
}

// TestSkillsDocInstalledPath: docs/skills.md names the installed root where
// the agent keeps it, under agents/<device>/ (issue 16 §8).
func TestSkillsDocInstalledPath(t *testing.T) {
	doc := readDoc(t, "../../docs/skills.md")
	if strings.Contains(doc, "`<data-dir>/installed`") || !strings.Contains(doc, "`<data-dir>/agents/<device>/installed`") {
		t.Error("docs/skills.md: the installed root is <data-dir>/agents/<device>/installed")
	}
}
