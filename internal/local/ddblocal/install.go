package ddblocal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DynamoDB Local ships inside an npm package; its licence forbids committing it, so it is
// fetched into a cache, never into a module tree. The tarball must have the digest pinned
// here (`npm view <Package> dist.integrity`; change both together), checked before anything
// in it is unpacked.
const (
	Package   = "amplify-dynamodb-simulator@2.9.30"
	Integrity = "sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="
)

// Installed reports whether dir holds DynamoDB Local.
func Installed(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "DynamoDBLocal.jar"))
	return err == nil
}

// Install fetches Package with `npm pack` (npm's own cache in npmCache, "" for npm's
// default), checks its digest against Integrity, and unpacks its emulator folder as dir. A
// failure leaves dir as it was.
func Install(ctx context.Context, dir, npmCache string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return errors.New("ddblocal: npm not found on PATH: DynamoDB Local is fetched with `npm pack` " + Package)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(parent, ".ddblocal-install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	args := []string{"pack", "--silent", Package}
	if npmCache != "" {
		args = append(args, "--cache", npmCache)
	}
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ddblocal: npm pack %s: %w: %s", Package, err, lastLines(string(out), 5))
	}
	tgz := filepath.Join(work, strings.ReplaceAll(Package, "@", "-")+".tgz")
	data, err := os.ReadFile(tgz)
	if err != nil {
		return fmt.Errorf("ddblocal: npm pack left no %s: %w", filepath.Base(tgz), err)
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != Integrity {
		return fmt.Errorf("ddblocal: %s: the tarball's digest is %s, not the pinned %s: not unpacking it", Package, got, Integrity)
	}
	staged := filepath.Join(work, "emulator")
	if err := untar(data, "package/emulator/", staged); err != nil {
		return err
	}
	if !Installed(staged) {
		return fmt.Errorf("ddblocal: %s holds no emulator/DynamoDBLocal.jar", Package)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(staged, dir)
}

// untar writes the regular files and folders of a gzipped tarball under prefix into dir,
// refusing any path that would land outside it.
func untar(data []byte, prefix, dir string) error {
	gz, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		return fmt.Errorf("ddblocal: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ddblocal: %w", err)
		}
		rel, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || rel == "" {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return fmt.Errorf("ddblocal: %s leaves the folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
