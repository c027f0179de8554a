package delayproxy_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/tools/delayproxy"
)

// echoServer accepts connections on 127.0.0.1 and writes back what it
// reads; greeting, when set, is written first on every connection.
func echoServer(t *testing.T, greeting string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if greeting != "" {
					if _, err := io.WriteString(c, greeting); err != nil {
						return
					}
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// assertClosed fails the test unless reading c ends with an error other
// than its read deadline: the proxy closed it.
func assertClosed(t *testing.T, c net.Conn, when string) {
	t.Helper()
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("read a byte from the connection %s", when)
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the connection stayed open %s", when)
	}
}

func start(t *testing.T, upstream string, delay time.Duration) *delayproxy.Proxy {
	t.Helper()
	p, err := delayproxy.Start(upstream, delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, p *delayproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads it back, returning how long it took.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) time.Duration {
	t.Helper()
	begin := time.Now()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo %q, want %q", got, msg)
	}
	return time.Since(begin)
}

func TestDelaysEachClientWrite(t *testing.T) {
	const delay = 60 * time.Millisecond
	p := start(t, echoServer(t, ""), delay)
	c := dial(t, p)
	r := bufio.NewReader(c)
	for i := range 3 { // every write on a kept-alive connection, not the first only
		if took := roundTrip(t, c, r, "ping\n"); took < delay {
			t.Errorf("round trip %d took %s, want at least the delay %s", i, took, delay)
		}
	}
}

func TestZeroDelayForwardsAtOnce(t *testing.T) {
	p := start(t, echoServer(t, ""), 0)
	c := dial(t, p)
	r := bufio.NewReader(c)
	if took := roundTrip(t, c, r, "ping\n"); took > time.Second {
		t.Errorf("round trip took %s without a delay", took)
	}
}

// Writes are pipelined: a second write sent right after the first arrives
// right after it, not a second delay later (three writes serialised would
// take three delays).
func TestWritesArePipelined(t *testing.T) {
	const delay = 250 * time.Millisecond
	p := start(t, echoServer(t, ""), delay)
	c := dial(t, p)
	begin := time.Now()
	for _, s := range []string{"one\n", "two\n", "three\n"} {
		if _, err := io.WriteString(c, s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // separate reads on the proxy's side
	}
	got := make([]byte, len("one\ntwo\nthree\n"))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if string(got) != "one\ntwo\nthree\n" {
		t.Errorf("got %q: order or content changed", got)
	}
	if took < delay || took >= 12*delay/5 {
		t.Errorf("three writes took %s, want about one delay (%s..%s), not three", took, delay, 12*delay/5)
	}
}

// What the upstream writes reaches the client at once.
func TestUpstreamAnswersAreNotDelayed(t *testing.T) {
	const delay = 500 * time.Millisecond
	p := start(t, echoServer(t, "hello\n"), delay)
	begin := time.Now()
	c := dial(t, p)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("greeting %q, %v", line, err)
	}
	if took := time.Since(begin); took >= delay {
		t.Errorf("greeting took %s, want less than the client delay %s", took, delay)
	}
}

func TestLargePayloadArrivesIntact(t *testing.T) {
	p := start(t, echoServer(t, ""), 2*time.Millisecond)
	c := dial(t, p)
	want := make([]byte, 1<<20)
	_, _ = rand.Read(want)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		errc <- err
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("1 MiB echoed through the proxy differs from what was sent")
	}
}

func TestCloseEndsOpenConnections(t *testing.T) {
	p := start(t, echoServer(t, ""), time.Millisecond)
	c := dial(t, p)
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "ping\n")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	assertClosed(t, c, "after Close")
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("the proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestUnreachableUpstreamClosesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	p := start(t, addr, time.Millisecond)
	c := dial(t, p)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	assertClosed(t, c, "although its upstream refused")
}

func TestNegativeDelayIsRefused(t *testing.T) {
	if p, err := delayproxy.Start("127.0.0.1:1", -time.Millisecond); err == nil {
		_ = p.Close()
		t.Fatal("a negative delay was accepted")
	}
}
