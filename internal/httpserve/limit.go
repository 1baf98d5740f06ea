package httpserve

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// phase is what a connection is doing, as far as the limits care.
type phase int

const (
	phaseNew     phase = iota // accepted; nothing read yet
	phaseRequest              // reading a request's headers
	phaseBody                 // in a handler, reading the request's body
	phaseServing              // serving a request whose body (if any) was read
	phaseIdle                 // kept alive between requests
)

// evictable says whether a connection in phase p may be closed to make
// room: it is not serving a request that it sent whole.
func (p phase) evictable() bool { return p != phaseServing }

// limiter keeps the connection limits of a Server.
type limiter struct {
	max, perAddr int
	log          *slog.Logger

	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	byAddr  map[string]int
	evicted int
	refused int
	// lingering counts refused connections still being closed gently, by
	// goroutines that closing waits for.
	lingering int
	closing   sync.WaitGroup
	// reported are the counts last logged, and when.
	reportedAt                time.Time
	reportedEv, reportedRefus int
}

// maxLingering bounds the refused connections closed gently at once
// (their 503 written, the client's request drained a moment so that it
// reads the answer instead of a reset); beyond it they are closed at once.
const maxLingering = 32

func newLimiter(max, perAddr int, log *slog.Logger) *limiter {
	return &limiter{max: max, perAddr: perAddr, log: log, conns: map[*limitedConn]struct{}{}, byAddr: map[string]int{}}
}

// limitedConn is a connection counted by the limiter.
type limitedConn struct {
	net.Conn
	lim   *limiter
	addr  string
	phase phase     // guarded by lim.mu
	since time.Time // when phase last changed; guarded by lim.mu
	once  sync.Once
}

// Close closes the connection and forgets it.
func (c *limitedConn) Close() error {
	c.once.Do(func() { c.lim.forget(c) })
	return c.Conn.Close()
}

// limitedListener admits connections within the limits.
type limitedListener struct {
	net.Listener
	lim *limiter
}

// Accept returns the next connection within the limits, closing an
// evictable one to make room or refusing the new one with a 503.
func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.lim.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// addrOf is the client address connections are counted by: the IP.
func addrOf(c net.Conn) string {
	a := c.RemoteAddr()
	if a == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// admit counts c in, after closing an evictable connection if c would
// pass a limit; or refuses it and returns nil.
func (l *limiter) admit(c net.Conn) *limitedConn {
	addr := addrOf(c)
	l.mu.Lock()
	var victim *limitedConn
	var which string
	switch {
	case l.byAddr[addr] >= l.perAddr:
		victim = l.oldestEvictable(addr)
		which = fmt.Sprintf("too many connections from your address (%d open, the most this server allows one client)", l.byAddr[addr])
	case len(l.conns) >= l.max:
		victim = l.oldestEvictable(l.busiestAddr())
		if victim == nil {
			victim = l.oldestEvictable("")
		}
		which = fmt.Sprintf("too many connections (%d open, the most this server allows)", len(l.conns))
	}
	full := which != ""
	if full && victim == nil {
		l.refused++
		gentle := l.lingering < maxLingering
		if gentle {
			l.lingering++
		}
		l.report()
		l.mu.Unlock()
		if gentle {
			l.closing.Go(func() { l.refuse(c, which, true) })
		} else {
			l.refuse(c, which, false)
		}
		return nil
	}
	if victim != nil {
		l.evicted++
		l.drop(victim) // counted out now, so the new one fits
		l.report()
	}
	lc := &limitedConn{Conn: c, lim: l, addr: addr, phase: phaseNew, since: time.Now()}
	l.conns[lc] = struct{}{}
	l.byAddr[addr]++
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	return lc
}

// oldestEvictable is the evictable connection of addr ("" for any) that
// has been in its phase longest; nil if there is none.
func (l *limiter) oldestEvictable(addr string) *limitedConn {
	var oldest *limitedConn
	for c := range l.conns {
		if (addr == "" || c.addr == addr) && c.phase.evictable() && (oldest == nil || c.since.Before(oldest.since)) {
			oldest = c
		}
	}
	return oldest
}

// busiestAddr is the address with the most connections that has an
// evictable one.
func (l *limiter) busiestAddr() string {
	best, n := "", 0
	for c := range l.conns {
		if c.phase.evictable() && l.byAddr[c.addr] > n {
			best, n = c.addr, l.byAddr[c.addr]
		}
	}
	return best
}

// drop counts c out (under mu).
func (l *limiter) drop(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
}

// forget counts out a connection being closed.
func (l *limiter) forget(c *limitedConn) {
	l.mu.Lock()
	l.drop(c)
	l.mu.Unlock()
}

// setPhase records what c is doing (c may be nil: a connection not from
// the limited listener).
func (l *limiter) setPhase(c *limitedConn, p phase) {
	if c == nil {
		return
	}
	l.mu.Lock()
	c.phase, c.since = p, time.Now()
	l.mu.Unlock()
}

// connState follows http.Server's view of each connection.
func (l *limiter) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		l.setPhase(c, phaseRequest)
	case http.StateIdle:
		l.setPhase(c, phaseIdle)
	case http.StateHijacked:
		l.setPhase(c, phaseServing)
	case http.StateClosed:
		l.forget(c)
	}
}

// refusedBody is the JSON body of a 503 for the limits.
const refusedBody = `{"error":{"code":"unavailable","message":%q}}`

// refuse answers c with a 503 and closes it. Gently: after the answer,
// the write side is closed and what the client sends is read for a moment,
// so that its request does not turn the close into a reset that would
// hide the answer.
func (l *limiter) refuse(c net.Conn, which string, gentle bool) {
	body := fmt.Sprintf(refusedBody, which+": close some, or retry later")
	resp := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Cache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(resp))
	if gentle {
		defer func() {
			l.mu.Lock()
			l.lingering--
			l.mu.Unlock()
		}()
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		buf := make([]byte, 4096)
		for total := 0; total < 64<<10; {
			n, err := c.Read(buf)
			total += n
			if err != nil {
				break
			}
		}
	}
	_ = c.Close()
}

// report logs, at most once a minute, how many connections were closed
// or refused for the limits since the last report (under mu).
func (l *limiter) report() {
	if time.Since(l.reportedAt) < time.Minute {
		return
	}
	l.log.Warn("connection limits reached: idle or unfinished connections closed to make room, others refused with 503",
		"closed", l.evicted-l.reportedEv, "refused", l.refused-l.reportedRefus, "open", len(l.conns),
		"max_connections", l.max, "max_connections_per_client", l.perAddr)
	l.reportedAt, l.reportedEv, l.reportedRefus = time.Now(), l.evicted, l.refused
}

func (l *limiter) stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Open: len(l.conns), Evicted: l.evicted, Refused: l.refused}
}
