package ddblocal

import (
	"context"
	"net"
	"strings"
	"testing"
)

func TestStartFailsClearly(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Options{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "make ddb-install") {
		t.Fatalf("missing jar: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Start(ctx, Options{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "java not found") {
		t.Fatalf("missing java: %v", err)
	}
}

func TestStartRefusesATakenPort(t *testing.T) {
	dir, err := DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if _, err := Start(context.Background(), Options{Dir: dir, Port: port}); err == nil || !strings.Contains(err.Error(), "is taken") {
		t.Fatalf("taken port: %v", err)
	}
}

func TestStartServesAndStops(t *testing.T) {
	srv, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://"))
	if err != nil {
		t.Fatalf("not serving: %v", err)
	}
	conn.Close()
	srv.Stop()
	if conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://")); err == nil {
		conn.Close()
		t.Fatal("still serving after Stop")
	}
}
