package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/drain"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/telemetry"
)

// The causes a run's context is cancelled with.
var (
	errCancelled = errors.New("cancelled by a client")
	errStopping  = errors.New("the server stopped")
)

// stoppedByServer is the error recorded with a run the server stopped: at
// its next start, the server resumes such runs when told to.
const stoppedByServer = "the server stopped while the run was running; resume it"

// Errors of the queue.
var (
	errQueueFull = errors.New("the run queue is full")
	errDraining  = errors.New("the server is shutting down")
	errBusy      = errors.New("the thread has a run in progress")
)

// queue runs the runs in the background, at most maxRunning at once, with
// at most queueSize waiting.
type queue struct {
	st         *app.Store
	eng        Engine
	logger     *slog.Logger
	redact     func(string) string
	maxRunning int
	queueSize  int
	tel        *telemetry.Telemetry // nil: runs are not traced

	mu       sync.Mutex
	wake     *sync.Cond
	waiting  []*job
	active   map[string]*job // queued or running here, by run id
	threads  map[string]bool // threads with an active run
	running  int
	reserved int // places taken by runs being stored (add)
	peak     int // most runs running at once (tests and load figures)
	draining bool
	workers  sync.WaitGroup
	// drained measures how fast runs leave, for a full queue's
	// Retry-After.
	drained *drain.Meter
}

// job is a run queued or running in this process.
type job struct {
	run    *runstore.Run
	answer json.RawMessage // the answer a resumed run waits for
	log    *runLog
	cancel context.CancelCauseFunc // set while it runs
	done   chan struct{}           // closed when it leaves the queue
	// released: its thread may take another run (its end is recorded).
	released bool
	// link is the span of the request that queued it (traceRun).
	link trace.SpanContext
}

func newQueue(st *app.Store, eng Engine, logger *slog.Logger, redact func(string) string, maxRunning, queueSize int, tel *telemetry.Telemetry) *queue {
	q := &queue{st: st, eng: eng, logger: logger, redact: redact, maxRunning: max(maxRunning, 1), queueSize: max(queueSize, 0), tel: tel,
		active: map[string]*job{}, threads: map[string]bool{}, drained: drain.New(nil)}
	q.wake = sync.NewCond(&q.mu)
	for range q.maxRunning {
		q.workers.Add(1)
		go q.work()
	}
	return q
}

// retryAfter is the Retry-After of a full queue: one run's time at the
// rate runs have been leaving it (drain.Meter).
func (q *queue) retryAfter() time.Duration { return q.drained.RetryAfter() }

// add queues a run, created (create) or resumed. The queue's bound and
// the thread's are checked and a place reserved under the queue's lock, so
// that they hold however many come at once; storing the run (create),
// reading its log's end and storing its first event happen after, without
// the lock, so that submissions and the workers do not wait behind one
// another's store round trips.
func (q *queue) add(ctx context.Context, run *runstore.Run, answer json.RawMessage, create func(*runstore.Run) error) error {
	q.mu.Lock()
	switch {
	case q.draining:
		q.mu.Unlock()
		return errDraining
	case q.threads[run.Thread]:
		q.mu.Unlock()
		return errBusy
	case q.running+len(q.waiting)+q.reserved >= q.maxRunning+q.queueSize:
		q.mu.Unlock()
		return errQueueFull
	}
	q.threads[run.Thread] = true
	q.reserved++
	q.mu.Unlock()

	j, err := q.prepare(ctx, run, answer, create)

	q.mu.Lock()
	q.reserved--
	if err != nil || q.draining {
		delete(q.threads, run.Thread)
		q.mu.Unlock()
		if j != nil {
			// The server stops: the run stays queued in the store, and
			// the next start runs it.
			j.log.close()
		}
		return err
	}
	q.active[run.ID] = j
	q.waiting = append(q.waiting, j)
	q.wake.Signal()
	q.mu.Unlock()
	return nil
}

// prepare stores a run about to be queued and opens its log.
func (q *queue) prepare(ctx context.Context, run *runstore.Run, answer json.RawMessage, create func(*runstore.Run) error) (*job, error) {
	if err := create(run); err != nil {
		return nil, err
	}
	log, err := openLog(ctx, q.st.Runs, run.ID, q.logger)
	if err != nil {
		return nil, err
	}
	own := *run // the worker's: the caller keeps reading its own
	j := &job{run: &own, answer: answer, log: log, done: make(chan struct{}), link: trace.SpanContextFromContext(ctx)}
	log.emit(EventStatus, statusData{Status: runstore.StatusQueued})
	return j, nil
}

// log is the event log of a run active here, or nil.
func (q *queue) log(runID string) *runLog {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j := q.active[runID]; j != nil {
		return j.log
	}
	return nil
}

// counts are the runs running and waiting.
func (q *queue) counts() (running, waiting, peak int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running, len(q.waiting), q.peak
}

// cancel stops a run: a waiting one leaves the queue as interrupted, a
// running one is cancelled and records itself. false when the run is not
// active here.
func (q *queue) cancel(ctx context.Context, runID string) bool {
	q.mu.Lock()
	j := q.active[runID]
	if j == nil {
		q.mu.Unlock()
		return false
	}
	if j.cancel != nil {
		j.cancel(errCancelled)
		q.mu.Unlock()
		return true
	}
	for i, w := range q.waiting {
		if w == j {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			break
		}
	}
	q.mu.Unlock()
	run := j.run
	now := time.Now().UTC()
	q.release(j)
	run.Status, run.Error, run.Updated, run.Ended = runstore.StatusInterrupted, "cancelled before it started", now, now
	if err := q.st.Runs.Update(context.WithoutCancel(ctx), run); err != nil {
		q.logger.Warn("could not record a cancelled run", "run", run.ID, "err", err)
	}
	j.log.emit(EventStatus, statusData{Status: run.Status, Error: run.Error})
	j.log.emit(EventEnd, endData{Status: run.Status})
	q.leave(j)
	return true
}

// release frees the job's thread for a next run: called as the run's end
// is recorded, so that a client that reads it ended can ask a follow-up at
// once.
func (q *queue) release(j *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !j.released {
		j.released = true
		delete(q.threads, j.run.Thread)
	}
}

// leave takes a job out of the active set and closes its log.
func (q *queue) leave(j *job) {
	q.release(j)
	j.log.close()
	q.mu.Lock()
	delete(q.active, j.run.ID)
	q.mu.Unlock()
	q.drained.Ended()
	close(j.done)
}

// work runs waiting jobs until the queue drains.
func (q *queue) work() {
	defer q.workers.Done()
	for {
		q.mu.Lock()
		for len(q.waiting) == 0 && !q.draining {
			q.wake.Wait()
		}
		if q.draining {
			q.mu.Unlock()
			return
		}
		j := q.waiting[0]
		q.waiting = q.waiting[1:]
		ctx, cancel := context.WithCancelCause(context.Background())
		j.cancel = cancel
		q.running++
		q.peak = max(q.peak, q.running)
		q.mu.Unlock()

		runCtx, endSpan := q.traceRun(ctx, j)
		q.execute(runCtx, j)
		endSpan()
		cancel(nil)

		q.mu.Lock()
		q.running--
		q.mu.Unlock()
		q.leave(j)
	}
}

// drain stops taking runs, cancels the running ones (each stores what it
// finished and records itself as interrupted) and waits for them, or for
// ctx. Waiting runs stay queued in the store: the next start runs them.
func (q *queue) drain(ctx context.Context) error {
	q.mu.Lock()
	q.draining = true
	for _, j := range q.active {
		if j.cancel != nil {
			j.cancel(errStopping)
		}
	}
	waiting := q.waiting
	q.waiting = nil
	q.wake.Broadcast()
	q.mu.Unlock()
	for _, j := range waiting {
		q.leave(j)
	}
	done := make(chan struct{})
	go func() { q.workers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs still recording when the server stopped: %w", ctx.Err())
	}
}
