package runstore

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	case r.Thread == "" || !utf8.ValidString(r.Thread) || strings.ContainsRune(r.Thread, 0):
		return fmt.Errorf("%w: run %q has no thread, or one that is not valid UTF-8 or has a NUL", ErrInvalid, r.ID)
	case r.Kind != KindResearch && r.Kind != KindAgent:
		return fmt.Errorf("%w: run %q has kind %q; want %q or %q", ErrInvalid, r.ID, r.Kind, KindResearch, KindAgent)
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
	case StatusRunning, StatusDone, StatusFailed, StatusInterrupted, StatusNeedsInput:
	default:
		return fmt.Errorf("%w: run %q has status %q", ErrInvalid, r.ID, r.Status)
	}
	if err := checkDocument(r.ID, "settings", r.Settings, int64(len(r.Settings)), ErrInvalid, ""); err != nil {
		return err
	}
	return checkDocument(r.ID, "report", r.Report, int64(len(r.Report)), ErrInvalid, "")
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

func exists(id string) error {
	return fmt.Errorf("%w: run %q is already stored; create it with another id (NewID)", ErrExists, id)
}

// prunable reports whether Prune removes r: it started before before and
// is not running in a live process.
func prunable(r *Run, before, now time.Time) bool {
	return r.Started.Before(before) && r.Effective(now, Alive) != StatusRunning
}
