package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/runstore"
)

// The types of a run's events (see the package doc).
const (
	EventStatus    = "status"
	EventActivity  = "activity"
	EventToken     = "token"
	EventState     = "state"
	EventInterrupt = "interrupt"
	EventReport    = "report"
	EventError     = "error"
	EventEnd       = "end"
)

// Tuning of the event log.
const (
	// tokenFlush is how long token events may wait to be stored: they come
	// many a second, and are stored in batches. Other events are stored as
	// they happen. Streams do not wait for it: they take events from memory.
	tokenFlush = 100 * time.Millisecond
	// maxTokenEvent bounds the text of one token event: tokens join the
	// last token event while no stream has taken it (see token), up to this
	// size.
	maxTokenEvent = 4096
	// maxUnflushed bounds the events waiting to be stored.
	maxUnflushed = 256
	// seqGap is how far ids jump after a process died with events it had
	// streamed but not stored: a client that saw them must not take new
	// events for them.
	seqGap = 1024
	// pingEvery keeps idle streams open through proxies.
	pingEvery = 15 * time.Second
)

// runLog is the event log of a run while this process works on it: every
// event of this stretch of the run is kept in memory for the streams, and
// stored (tokens in batches) so that a client that comes later, or after a
// restart, reads it back.
type runLog struct {
	runID  string
	store  runstore.Store
	logger *slog.Logger

	mu      sync.Mutex
	mem     []runstore.Event // this stretch's events, from seq first
	first   int64
	next    int64
	stored  int           // mem[:stored] are in the store
	taken   int           // mem[:taken] are stored or being stored: fixed
	read    int64         // the newest seq a stream has taken
	tail    string        // the text of the last event, when it is a token event tokens may join
	changed chan struct{} // closed when an event is added or the log closes
	closed  bool
	timer   *time.Timer // pending flush of tokens

	flushMu sync.Mutex // one flush at a time, in order
}

// openLog continues the stored log of a run.
func openLog(ctx context.Context, store runstore.Store, runID string, logger *slog.Logger) (*runLog, error) {
	next := int64(1)
	last, err := store.LastEvent(ctx, runID, "")
	switch {
	case err == nil:
		next = last.Seq + 1
		if last.Type != EventEnd {
			next += seqGap // the last stretch did not end cleanly
		}
	case !errors.Is(err, runstore.ErrNotFound):
		return nil, err
	}
	return &runLog{runID: runID, store: store, logger: logger, first: next, next: next, changed: make(chan struct{})}, nil
}

// emit adds an event with v as its data.
func (l *runLog) emit(typ string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(errorBody{Error: errorDetail{Code: codeInternal, Message: "an event could not be encoded: " + err.Error()}})
		typ = EventError
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.tail = ""
	l.add(typ, data)
}

// token adds a piece of the answer. It goes out at once: streams are woken
// for it, none waits for a clock. While no stream has taken the last event
// yet — they are busy writing the ones before, or none is connected — and
// it is a token event not being stored, the piece joins it instead of
// making an event of its own: tokens are gathered only while a write is in
// flight, so that a run's log holds few token events however finely the
// model streams, and a slow client gets them in few writes.
func (l *runLog) token(t tokenData) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	last := len(l.mem) - 1
	if !t.Restart && t.Text != "" && l.tail != "" && last >= l.taken && l.mem[last].Seq > l.read && len(l.tail)+len(t.Text) <= maxTokenEvent {
		l.tail += t.Text
		data, err := json.Marshal(tokenData{Text: l.tail})
		if err == nil {
			l.mem[last].Data = data
			l.mu.Unlock()
			return
		}
	}
	data, err := json.Marshal(t)
	if err != nil { // a string and a bool: not reached
		l.mu.Unlock()
		l.emit(EventError, errorBody{Error: errorDetail{Code: codeInternal, Message: "a token could not be encoded: " + err.Error()}})
		return
	}
	l.tail = ""
	if !t.Restart {
		l.tail = t.Text
	}
	l.add(EventToken, data)
}

// add appends an event and stores it, now or soon (tokens); l.mu is held,
// and add releases it.
func (l *runLog) add(typ string, data json.RawMessage) {
	l.mem = append(l.mem, runstore.Event{Seq: l.next, Type: typ, At: time.Now().UTC(), Data: data})
	l.next++
	close(l.changed)
	l.changed = make(chan struct{})
	now := typ != EventToken || len(l.mem)-l.stored >= maxUnflushed
	if !now && l.timer == nil {
		l.timer = time.AfterFunc(tokenFlush, l.flush)
	}
	l.mu.Unlock()
	if now {
		l.flush()
	}
}

// flush stores the events not stored yet. A failure is logged: the run goes
// on, and the events stay in memory for the streams of this process.
func (l *runLog) flush() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	batch := l.mem[l.stored:]
	l.taken = len(l.mem) // fixed from now: no token joins them
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := l.store.AppendEvents(context.Background(), l.runID, batch); err != nil {
		l.logger.Warn("could not store a run's events", "run", l.runID, "events", len(batch), "err", err)
		return
	}
	l.mu.Lock()
	l.stored += len(batch)
	l.mu.Unlock()
}

// close stores what is left and wakes the streams: the stretch is over.
func (l *runLog) close() {
	l.flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
}

// since returns the events after seq, a channel closed when there are more,
// and whether the log is closed.
func (l *runLog) since(after int64) ([]runstore.Event, <-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	if after >= l.first {
		i = int(min(after-l.first+1, int64(len(l.mem))))
	}
	if n := len(l.mem); n > i {
		l.read = max(l.read, l.mem[n-1].Seq) // taken: no token joins it now
	}
	return l.mem[i:len(l.mem):len(l.mem)], l.changed, l.closed
}

// stream writes a run's events after `after` to w as Server-Sent Events:
// the stored ones, then, while this process works on the run, the new ones
// as they come. It returns when the run is no longer active here and every
// event was sent, or when the client goes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run *runstore.Run, after int64) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, codeInternal, "this connection cannot stream")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()

	log := s.runs.log(run.ID)
	// Stored events first: those before this process's stretch, or all of
	// them when the run is not active here.
	for {
		evs, err := s.store.Runs.Events(ctx, run.ID, after, 500)
		if err != nil {
			writeSSE(w, 0, EventError, errorBody{Error: errorDetail{Code: codeInternal, Message: "reading the run's events: " + err.Error()}})
			return
		}
		for _, ev := range evs {
			if log != nil && ev.Seq >= log.first {
				break
			}
			writeEvent(w, ev)
			after = ev.Seq
		}
		if len(evs) < 500 || (log != nil && after >= log.first-1) {
			break
		}
	}
	flusher.Flush()
	if log == nil {
		s.endIfQuiet(ctx, w, run, after)
		flusher.Flush()
		return
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		evs, changed, closed := log.since(after)
		for _, ev := range evs {
			writeEvent(w, ev)
			after = ev.Seq
		}
		if len(evs) > 0 {
			flusher.Flush()
		}
		if closed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// endIfQuiet ends the stream of a run that is not active here and has no
// event after `after` with an end event without an id (so that a client's
// Last-Event-ID stays put): a run of the CLI, or one whose process died.
func (s *Server) endIfQuiet(ctx context.Context, w http.ResponseWriter, run *runstore.Run, after int64) {
	last, err := s.store.Runs.LastEvent(ctx, run.ID, "")
	if err == nil && last.Seq <= after && last.Type == EventEnd {
		return // the client has the end already
	}
	fresh, err := s.store.Runs.Get(ctx, run.ID)
	if err != nil {
		return
	}
	writeSSE(w, 0, EventEnd, endData{Status: fresh.Effective(time.Now(), runstore.Alive)})
}

func writeEvent(w http.ResponseWriter, ev runstore.Event) {
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, compactJSON(ev.Data))
}

// writeSSE writes an event that is not in the log (id 0: none).
func writeSSE(w http.ResponseWriter, id int64, typ string, v any) {
	data, _ := json.Marshal(v)
	if id > 0 {
		fmt.Fprintf(w, "id: %d\n", id)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
}

// compactJSON puts a stored document on one line, as a data line must be.
func compactJSON(data []byte) []byte {
	for _, b := range data {
		if b == '\n' || b == '\r' {
			var buf bytes.Buffer
			if err := json.Compact(&buf, data); err == nil {
				return buf.Bytes()
			}
			break
		}
	}
	return data
}

// lastEventID reads where a client resumes: the Last-Event-ID header, or
// ?after=.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("Last-Event-ID (or after) %q is not an event id: use the id of the last event received", v)
	}
	return n, nil
}
