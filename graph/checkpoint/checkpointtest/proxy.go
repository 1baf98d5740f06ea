package checkpointtest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy to a database server for tests of what a
// store does when its connections are cut: Cut closes every connection it
// carries, as a server restart does, and refuses new ones for a while.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	refuse  time.Time // connections accepted before it are closed at once
	cuts    int
	wg      sync.WaitGroup
	stopped bool
}

// NewProxy listens on 127.0.0.1 and forwards each connection to target
// (host:port). It stops, closing every connection, when tb ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("checkpointtest: proxy: listening on loopback: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(p.stop)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection the proxy carries and, for the next
// refuseFor, closes each new one as soon as it is accepted, as a server
// that is restarting does.
func (p *Proxy) Cut(refuseFor time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts++
	p.refuse = time.Now().Add(refuseFor)
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Cuts is how many times Cut was called.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed by stop
		}
		p.mu.Lock()
		if p.stopped || time.Now().Before(p.refuse) {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	if _, live := p.conns[c]; !live {
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	p.drop(c)
	p.drop(up)
	<-done
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) stop() {
	p.mu.Lock()
	p.stopped = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}
