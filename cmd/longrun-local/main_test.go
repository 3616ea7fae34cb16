package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The hint about .cache/ is given in a git work tree that does not ignore it, and not once
// it is ignored, nor outside a work tree.
func TestCacheHintUntilTheCacheIsIgnored(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	if hint := cacheHint(ctx, outside); hint != "" {
		t.Fatalf("outside a work tree: %q", hint)
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	hint := cacheHint(ctx, repo)
	if !strings.Contains(hint, filepath.Join(repo, ".cache", "bin", "local")) || !strings.Contains(hint, "add .cache/ to your .gitignore") {
		t.Fatalf("not ignored, hint %q", hint)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".cache/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if hint := cacheHint(ctx, repo); hint != "" {
		t.Fatalf("ignored, hint %q", hint)
	}
}
