package runstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxCallKeyBytes bounds the key of a recorded call (RecordCall).
const MaxCallKeyBytes = 256

// ErrClaimed: Claim found the run changed by another process since it was
// read — another resume took it first.
var ErrClaimed = errors.New("runstore: run taken by another process")

// checkCall validates the arguments of RecordCall and Call.
func checkCall(runID, key string) error {
	if err := checkID(runID); err != nil {
		return err
	}
	if key == "" || len(key) > MaxCallKeyBytes || !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
		return fmt.Errorf("%w: run %q: a call's key has 1 to %d bytes of valid UTF-8 without NUL; got %d bytes", ErrInvalid, runID, MaxCallKeyBytes, len(key))
	}
	return nil
}

func (s *sqlStore) RecordCall(ctx context.Context, runID, key string, data []byte) error {
	if err := checkCall(runID, key); err != nil {
		return err
	}
	if err := checkDocument(runID, "call "+key, data, int64(len(data)), ErrInvalid, ""); err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%w: run %q: the result of call %q is empty", ErrInvalid, runID, key)
	}
	err := s.db.tx(ctx, func(c sqlConn) error {
		// The run's row stays locked against its deletion until the
		// call is in (see sql.go).
		var one int
		err := scanOne(ctx, c, []any{&one}, `SELECT 1 FROM research_runs WHERE id = $1`+s.d.keyShare, runID)
		switch {
		case errors.Is(err, errNoRows):
			return notFound(runID)
		case err != nil:
			return err
		}
		_, err = c.exec(ctx, `INSERT INTO research_run_calls (run_id, key, at, data) VALUES ($1, $2, $3, $4)
			ON CONFLICT (run_id, key) DO NOTHING`, runID, key, s.time(normalTime(time.Now())), data)
		return err
	})
	if err != nil && !ours(err) {
		return fmt.Errorf("runstore: recording call %q of run %q in %s: %w", key, runID, s.d.name, err)
	}
	return err
}

func (s *sqlStore) Call(ctx context.Context, runID, key string) ([]byte, error) {
	if err := checkCall(runID, key); err != nil {
		return nil, err
	}
	var size int64
	var data []byte
	err := scanOne(ctx, s.db, []any{&size, &data}, `SELECT octet_length(data), CASE WHEN octet_length(data) <= $3 THEN data END
		FROM research_run_calls WHERE run_id = $1 AND key = $2`, runID, key, MaxDocumentBytes)
	switch {
	case errors.Is(err, errNoRows):
		return nil, fmt.Errorf("%w: run %q has recorded no call %q", ErrNotFound, runID, key)
	case err != nil:
		return nil, fmt.Errorf("runstore: reading call %q of run %q from %s: %w", key, runID, s.d.name, err)
	}
	if err := checkDocument(runID, "call "+key, data, size, ErrCorrupt, ""); err != nil {
		return nil, err
	}
	return data, nil
}

func (s *sqlStore) Claim(ctx context.Context, r *Run, seen *Run) error {
	if err := checkUpdate(r); err != nil {
		return err
	}
	if seen == nil || seen.ID != r.ID {
		return fmt.Errorf("%w: Claim needs the run %q as it was read", ErrInvalid, r.ID)
	}
	n := normalized(r)
	changed, err := s.db.exec(ctx, `UPDATE research_runs SET question = $2, status = $3, updated = $4, ended = $5,
		error = $6, tokens = $7, calls = $8, host = $9, pid = $10, settings = $11, report = $12, cost_usd = $13
		WHERE id = $1 AND status = $14 AND host = $15 AND pid = $16`,
		n.ID, n.Question, string(n.Status), s.time(n.Updated), s.time(n.Ended),
		n.Error, n.Tokens, n.Calls, n.Host, n.PID, document(n.Settings), document(n.Report), cost(n.Cost),
		string(seen.Status), seen.Host, seen.PID)
	if err != nil {
		return fmt.Errorf("runstore: claiming run %q in %s: %w", r.ID, s.d.name, err)
	}
	if changed > 0 {
		return nil
	}
	now, err := s.exact(ctx, r.ID)
	if err != nil {
		return err
	}
	if now.Status == n.Status && now.Host == n.Host && now.PID == n.PID && now.Updated.Equal(normalTime(n.Updated)) {
		// This claim, stored by an attempt whose reply was lost (see
		// retryDB).
		return nil
	}
	return fmt.Errorf("%w: run %s was taken up meanwhile (now %s, process %d on %s); it is not resumed here twice",
		ErrClaimed, r.ID, now.Status, now.PID, now.Host)
}
