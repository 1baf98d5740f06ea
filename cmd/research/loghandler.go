package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// lineHandler is the CLI's slog handler without -v: each warning or error
// record becomes one readable line on the console, in the timeline while a
// run shows one —
//
//	[  2.1s    390 tok] Warning: search: provider failed, trying the next (provider: searxng, next: tavily): searxng: HTTP 502
//
// — instead of slog's key=value text. The message comes first, then the
// record's other attributes in brackets, then its error; each folded onto
// one line and cut, internal package prefixes dropped (userText), and
// known secrets masked by the console. A line said once is not said again.
// Trace and span ids (--trace) are left out: the trace file has them.
type lineHandler struct {
	c     *console
	level slog.Leveler
	attrs []slog.Attr // from WithAttrs, keys prefixed with their groups
	group string      // the WithGroup prefix, "a.b."
	seen  *sync.Map   // lines already printed (shared by the handler's copies)
}

func newLineHandler(c *console, level slog.Leveler) *lineHandler {
	return &lineHandler{c: c, level: level, seen: &sync.Map{}}
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := *h
	out.attrs = slices.Clone(h.attrs)
	for _, a := range attrs {
		out.attrs = append(out.attrs, h.grouped(a))
	}
	return &out
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	out := *h
	out.group = h.group + name + "."
	return &out
}

func (h *lineHandler) grouped(a slog.Attr) slog.Attr {
	if h.group != "" {
		a.Key = h.group + a.Key
	}
	return a
}

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, h.grouped(a))
		return true
	})
	line := recordLine(r.Level, r.Message, attrs)
	if _, dup := h.seen.LoadOrStore(line, true); dup {
		return nil
	}
	h.c.stamped(line)
	return nil
}

// recordLine renders a record as one line (see lineHandler).
func recordLine(level slog.Level, msg string, attrs []slog.Attr) string {
	label := "Warning"
	switch {
	case level >= slog.LevelError:
		label = "Error"
	case level < slog.LevelWarn:
		label = "Note"
	}
	var details, errs []string
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		v := a.Value.Resolve()
		key := prefix + a.Key
		name := key[strings.LastIndexByte(key, '.')+1:] // without its groups
		switch {
		case v.Kind() == slog.KindGroup:
			for _, g := range v.Group() {
				add(key+".", g)
			}
		case name == "trace_id" || name == "span_id" || a.Equal(slog.Attr{}):
		case name == "err" || name == "error" || isError(v):
			errs = append(errs, oneLine(userText(v.String()), 300))
		default:
			details = append(details, key+": "+oneLine(userText(v.String()), 120))
		}
	}
	for _, a := range attrs {
		add("", a)
	}
	var b strings.Builder
	b.WriteString(label + ": " + oneLine(userText(msg), 200))
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	for _, e := range errs {
		b.WriteString(": " + e)
	}
	return b.String()
}

func isError(v slog.Value) bool {
	if v.Kind() != slog.KindAny {
		return false
	}
	_, ok := v.Any().(error)
	return ok
}
