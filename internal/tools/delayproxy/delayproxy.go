package delayproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards the connections it accepts to its upstream, delaying what
// clients write. Start it with [Start]; stop it with [Proxy.Close]. Its
// methods are safe for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string
	delay    time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards every connection
// to upstream (host:port), each client write delayed by delay. Writes are
// pipelined, not serialised: two writes made 1 ms apart arrive 1 ms apart,
// each delay later, as on a network with that one-way latency. The upstream's
// answers are not delayed, so a request and its answer take delay more than
// they would without the proxy. A zero delay forwards at once. It returns an
// error when it cannot listen or delay is negative.
func Start(upstream string, delay time.Duration) (*Proxy, error) {
	if delay < 0 {
		return nil, fmt.Errorf("delay proxy: negative delay %s", delay)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("delay proxy: listen on 127.0.0.1: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address as an http:// URL, for an SDK's endpoint.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Delay is the delay the proxy adds to every client write.
func (p *Proxy) Delay() time.Duration { return p.delay }

// Close stops accepting, closes every open connection (both sides) and
// waits until the proxy's goroutines have ended. It returns the listener's
// close error; closing twice returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("delay proxy: close listener: %w", err)
	}
	return nil
}

// track records c as open, or closes it and returns false when the proxy is
// closing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a failed accept concerns one client only
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.forward(client)
	}
}

// forward joins client to a new upstream connection until either side
// ends; then both are closed.
func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	upstream, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return // the client sees its connection closed, as with a refused one
	}
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)

	done := make(chan struct{}, 2)
	go func() {
		p.delayed(upstream, client)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	// One direction ended: end the other by closing both connections, then
	// wait for it so that no goroutine outlives Close.
	_ = client.Close()
	_ = upstream.Close()
	<-done
}

// chunk is one client write and when it may reach the upstream.
type chunk struct {
	data []byte
	due  time.Time
}

// delayed copies src to dst, each read from src written to dst p.delay
// after it was read. A reader goroutine stamps the chunks, so that a slow
// delivery does not hold the next chunk's clock.
func (p *Proxy) delayed(dst, src net.Conn) {
	if p.delay == 0 {
		_, _ = io.Copy(dst, src)
		return
	}
	chunks := make(chan chunk, 64)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{data: buf[:n], due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range chunks {
		if failed {
			continue // drain, so that the reader never blocks on a full channel
		}
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			failed = true
			_ = src.Close() // ends the reader
		}
	}
}
