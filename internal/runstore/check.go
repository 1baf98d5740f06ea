package runstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxIDBytes bounds a run id.
const maxIDBytes = 64

// maxMatches is how many ids an ErrAmbiguous error lists.
const maxMatches = 20

// checkCreate validates a run for Create.
func checkCreate(r *Run) error {
	if err := checkUpdate(r); err != nil {
		return err
	}
	switch {
	case !validThread(r.Thread):
		return fmt.Errorf("%w: run %q has no thread, or one that is not valid UTF-8 or has a NUL", ErrInvalid, r.ID)
	case !r.Kind.valid():
		return fmt.Errorf("%w: run %q has kind %q; want %q, %q or %q", ErrInvalid, r.ID, r.Kind, KindResearch, KindAgent, KindFlow)
	case r.Started.IsZero():
		return fmt.Errorf("%w: run %q has no start time", ErrInvalid, r.ID)
	}
	return nil
}

// checkUpdate validates the fields of a run Update writes.
func checkUpdate(r *Run) error {
	if r == nil {
		return fmt.Errorf("%w: nil run", ErrInvalid)
	}
	if err := checkID(r.ID); err != nil {
		return err
	}
	switch r.Status {
	case StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusInterrupted, StatusNeedsInput:
	default:
		return fmt.Errorf("%w: run %q has status %q", ErrInvalid, r.ID, r.Status)
	}
	if r.Cost != nil && (math.IsNaN(*r.Cost) || math.IsInf(*r.Cost, 0) || *r.Cost < 0) {
		return fmt.Errorf("%w: run %q has cost %v; want a finite number of US dollars, 0 or more, or nil when it is unknown", ErrInvalid, r.ID, *r.Cost)
	}
	if err := checkDocument(r.ID, "settings", r.Settings, int64(len(r.Settings)), ErrInvalid, ""); err != nil {
		return err
	}
	return checkDocument(r.ID, "report", r.Report, int64(len(r.Report)), ErrInvalid, "")
}

// validThread reports whether id is a thread id a store takes: not empty,
// valid UTF-8 without NUL.
func validThread(id string) bool {
	return id != "" && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// checkThread validates a thread for CreateThread.
func checkThread(t *Thread) error {
	switch {
	case t == nil:
		return fmt.Errorf("%w: nil thread", ErrInvalid)
	case !validThread(t.ID):
		return fmt.Errorf("%w: thread %q has no id, or one that is not valid UTF-8 or has a NUL (NewID makes one)", ErrInvalid, t.ID)
	case t.Kind != "" && !t.Kind.valid():
		return fmt.Errorf("%w: thread %q has kind %q; want none, %q, %q or %q", ErrInvalid, t.ID, t.Kind, KindResearch, KindAgent, KindFlow)
	case t.Created.IsZero():
		return fmt.Errorf("%w: thread %q has no creation time", ErrInvalid, t.ID)
	}
	return checkThreadData(t.ID, t.Data)
}

// checkThreadData validates a thread's Data: empty, or a JSON document of
// at most MaxDocumentBytes.
func checkThreadData(id string, data []byte) error {
	switch {
	case len(data) > MaxDocumentBytes:
		return fmt.Errorf("%w: thread %q: its data document has %d bytes, over the limit of %d MiB", ErrTooLarge, id, len(data), MaxDocumentBytes>>20)
	case len(data) > 0 && !json.Valid(data):
		return fmt.Errorf("%w: thread %q: its data document is not valid JSON", ErrInvalid, id)
	}
	return nil
}

// checkID accepts 1 to maxIDBytes printable UTF-8 characters without
// spaces.
func checkID(id string) error {
	if id == "" || len(id) > maxIDBytes {
		return fmt.Errorf("%w: a run id has 1 to %d bytes; got %d (NewID makes one)", ErrInvalid, maxIDBytes, len(id))
	}
	if !utf8.ValidString(id) || strings.ContainsFunc(id, func(c rune) bool { return !unicode.IsPrint(c) || unicode.IsSpace(c) }) {
		return fmt.Errorf("%w: run id %q has a space or an unprintable character (NewID makes one)", ErrInvalid, id)
	}
	return nil
}

// checkDocument checks one of a run's JSON documents (what names it): at
// most MaxDocumentBytes, where size is its length (which a SQL store knows
// before reading the data), and valid JSON, else an error wrapping invalid.
// hint, when not empty, is added to the errors: what to do.
func checkDocument(id, what string, data []byte, size int64, invalid error, hint string) error {
	if hint != "" {
		hint = "; " + hint
	}
	if size > MaxDocumentBytes {
		return fmt.Errorf("%w: run %q: its %s document has %d bytes, over the limit of %d MiB%s",
			ErrTooLarge, id, what, size, MaxDocumentBytes>>20, hint)
	}
	if len(data) > 0 && !json.Valid(data) {
		return fmt.Errorf("%w: run %q: its %s document is not valid JSON%s", invalid, id, what, hint)
	}
	return nil
}

// normalized returns a copy of r as a store keeps it: free text as valid
// UTF-8 without NUL, times in UTC to the microsecond (without monotonic
// clock reading), empty documents as nil, documents copied.
func normalized(r *Run) *Run {
	c := *r
	c.Question, c.Error, c.Host = text(r.Question), text(r.Error), text(r.Host)
	c.Started = normalTime(r.Started)
	c.Updated = normalTime(r.Updated)
	c.Ended = normalTime(r.Ended)
	c.Settings = cloneDocument(r.Settings)
	c.Report = cloneDocument(r.Report)
	return &c
}

// text replaces the bytes of s that are not valid UTF-8, and NUL
// characters, by U+FFFD, which PostgreSQL's text refuses.
func text(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func normalTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

func cloneDocument(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return nil
	}
	return bytes.Clone(d)
}

// notFound is the error for a missing run with exactly the id.
func notFound(id string) error {
	return fmt.Errorf("%w: no run has the id %q", ErrNotFound, id)
}

// exists is the error for a run id that is taken.
func exists(id string) error {
	return fmt.Errorf("%w: run %q is already stored; create it with another id (NewID)", ErrExists, id)
}

// prunable reports whether Prune removes r: it started before before, is
// not running in a live process and is not queued.
func prunable(r *Run, before, now time.Time) bool {
	if !r.Started.Before(before) {
		return false
	}
	status := r.Effective(now, Alive)
	return status != StatusRunning && status != StatusQueued
}
