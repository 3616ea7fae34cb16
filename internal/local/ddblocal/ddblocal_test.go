package ddblocal

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
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

// A Java without its compiler (a JRE) cannot run the launcher that binds DynamoDB Local to
// the loopback address: Start says so, rather than only that it exited. A JDK told to leave
// the compiler out stands in for a JRE.
func TestStartNeedsAJDK(t *testing.T) {
	dir, err := DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("JDK_JAVA_OPTIONS", "--limit-modules=java.se")
	if srv, err := Start(context.Background(), Options{Dir: dir}); err == nil {
		srv.Stop()
		t.Fatal("started without a compiler")
	} else if !strings.Contains(err.Error(), "install a JDK") {
		t.Fatalf("%v; want it to ask for a JDK", err)
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

// Issue #20, item 8: DynamoDB Local listened on every interface, so the development table
// was reachable from the network. It must answer on 127.0.0.1 only: a connection to any
// other address of this machine is refused. On Linux every 127.0.0.0/8 address is this
// machine's, so 127.0.0.2 tells a loopback-only listener from a wildcard one even where the
// machine has no other address.
func TestItListensOnLoopbackOnly(t *testing.T) {
	srv, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(srv.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port)); err != nil {
		t.Fatalf("not serving on 127.0.0.1: %v", err)
	} else {
		conn.Close()
	}
	// 127.0.0.2 is always tried: on Linux the whole of 127/8 reaches the loopback
	// interface, so a server listening on every address answers there; elsewhere the dial
	// fails either way. So the test always has an address to try, and never skips.
	others := []string{"127.0.0.2"}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.Equal(net.IPv4(127, 0, 0, 1)) && !ip.IP.IsLinkLocalUnicast() {
			others = append(others, ip.IP.String())
		}
	}
	for _, host := range others {
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("DynamoDB Local answers on %s: it must listen on 127.0.0.1 only", host)
		}
	}
}
