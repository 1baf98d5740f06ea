package research

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"

	"github.com/deepgraph/deepgraph/nodes"
)

// CallJournal keeps the results of the external calls a run pays for — the
// searches and page reads of SearchBackend — so that the run, resumed after
// a crash or a kill, serves them again instead of paying for them twice.
// The graph's checkpoints keep what finished tasks wrote; a research task
// killed after its search but before its summary would otherwise search
// and read its pages again. deepgraph's run store is one
// (runstore.Store.RecordCall); keys name the run's calls, so one journal
// serves one run.
//
// It is the interface of the agent's journal of its effectful tool calls
// (nodes.CallJournal): one run store serves both.
type CallJournal = nodes.CallJournal

// Journal records the run's searches and page reads in j, and serves
// those it recorded already from there (see CallJournal): pass the same
// journal to Resume to not pay for them again. Without it a run keeps
// them in memory while it runs: a task run again after a transient
// failure does not pay for them twice either.
func Journal(j CallJournal) RunOption { return func(o *runOptions) { o.journal = j } }

type journalKey struct{}

// ContextWithJournal returns ctx carrying j as the journal of the research
// graph's tasks that run under it (nil: one in memory), for a program that
// runs the graph itself, as research serve runs Researcher.Graph(); Run,
// Stream and Resume take theirs from Journal.
func ContextWithJournal(ctx context.Context, j CallJournal) context.Context {
	return withJournal(ctx, j)
}

// withJournal puts the run's journal in the context its tasks run in: j,
// or, when the run has none, one in memory for the run, so that a task
// its node runs again (a retried web_research) does not search and read
// again what it had found (one budget per external call).
func withJournal(ctx context.Context, j CallJournal) context.Context {
	if j == nil {
		j = &memoryJournal{calls: map[string][]byte{}}
	}
	return context.WithValue(ctx, journalKey{}, j)
}

// memoryJournal is the journal of a run without one: it lasts as long as
// the run's call (Run, Stream, Resume), not across a crash.
type memoryJournal struct {
	mu    sync.Mutex
	calls map[string][]byte
}

func (m *memoryJournal) Recall(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.calls[key]
	return data, ok, nil
}

func (m *memoryJournal) Record(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[key] = data
	return nil
}

func journalOf(ctx context.Context) CallJournal {
	j, _ := ctx.Value(journalKey{}).(CallJournal)
	return j
}

// callKey names a call in a journal: its kind and a hash of its arguments,
// short and of a fixed length whatever the query or URL.
func callKey(kind string, args ...string) string {
	h := sha256.New()
	for _, a := range args {
		h.Write([]byte(strconv.Itoa(len(a))))
		h.Write([]byte{':'})
		h.Write([]byte(a))
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil))
}

// recorded returns the result of the call key: from the run's journal when
// it holds it, else from call, recorded in the journal before it is
// returned. Without a journal (a Backend called outside a run) it is call(). A journal that cannot be read
// or written is logged and passed by: the call is made, its result used.
func recorded[T any](ctx context.Context, logger *slog.Logger, key string, call func() (T, error)) (T, error) {
	j := journalOf(ctx)
	if j == nil {
		return call()
	}
	data, ok, err := j.Recall(ctx, key)
	switch {
	case err != nil:
		warn(ctx, logger, "could not read a recorded call of the run; making it again", key, err)
	case ok:
		var v T
		err := json.Unmarshal(data, &v)
		if err == nil {
			return v, nil
		}
		warn(ctx, logger, "a recorded call of the run cannot be read back; making it again", key, err)
	}
	v, err := call()
	if err != nil {
		return v, err
	}
	data, err = json.Marshal(v)
	if err == nil {
		err = j.Record(ctx, key, data)
	}
	if err != nil && ctx.Err() == nil {
		warn(ctx, logger, "could not record a call of the run: a resume would make it again", key, err)
	}
	return v, nil
}

func warn(ctx context.Context, logger *slog.Logger, msg, key string, err error) {
	if logger != nil {
		logger.WarnContext(ctx, msg, "call", key, "err", err)
	}
}
