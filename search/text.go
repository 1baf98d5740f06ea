package search

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// plainText returns the text of an HTML fragment: tags removed, entities
// decoded, script and style dropped, whitespace collapsed. Brave marks
// query words with <strong>; SearXNG engines sometimes leak markup.
func plainText(fragment string) string {
	if !strings.ContainsAny(fragment, "<&") {
		return strings.Join(strings.Fields(fragment), " ")
	}
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	skip := 0
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			n := string(name)
			if n == "script" || n == "style" {
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			}
			if !inlineTags[n] {
				b.WriteByte(' ') // block boundaries separate words
			}
		}
	}
}

// inlineTags do not separate words: "<b>Go</b>lang" is one word.
var inlineTags = map[string]bool{
	"a": true, "abbr": true, "b": true, "bdi": true, "bdo": true, "cite": true, "code": true,
	"data": true, "dfn": true, "em": true, "i": true, "kbd": true, "mark": true, "q": true,
	"s": true, "samp": true, "small": true, "span": true, "strong": true, "sub": true,
	"sup": true, "time": true, "u": true, "var": true,
}

// timeLayouts are the absolute date forms search APIs use.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02T15:04",
	"2006-01-02",
	time.RFC1123Z,
	time.RFC1123,
	time.RFC850,
	time.ANSIC,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"January 2, 2006",
	"Jan 2, 2006",
	"2 January 2006",
	"2 Jan 2006",
	"2006/01/02",
}

// parseTime reads a publication date: an absolute date in one of the usual
// layouts (dates without a zone are UTC), Unix seconds, or a relative age
// such as "3 days ago" counted back from now. Implausible dates (before
// 1900, or more than a day in the future) are rejected.
func parseTime(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	plausible := func(t time.Time) (time.Time, bool) {
		if t.Year() < 1900 || t.After(now.Add(24*time.Hour)) {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return plausible(t)
		}
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) && secs > 0 && secs < 1e11 {
		whole, frac := math.Modf(secs)
		return plausible(time.Unix(int64(whole), int64(frac*1e9)))
	}
	if d, ok := parseAge(s, now); ok {
		return plausible(d)
	}
	return time.Time{}, false
}

// parseAge reads "3 days ago", "an hour ago", "yesterday".
func parseAge(s string, now time.Time) (time.Time, bool) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 1 && f[0] == "yesterday" {
		return now.AddDate(0, 0, -1), true
	}
	if len(f) != 3 || f[2] != "ago" {
		return time.Time{}, false
	}
	n := 1
	if f[0] != "a" && f[0] != "an" {
		v, err := strconv.Atoi(f[0])
		if err != nil || v < 0 || v > 10000 {
			return time.Time{}, false
		}
		n = v
	}
	switch strings.TrimSuffix(f[1], "s") {
	case "second":
		return now.Add(-time.Duration(n) * time.Second), true
	case "minute":
		return now.Add(-time.Duration(n) * time.Minute), true
	case "hour":
		return now.Add(-time.Duration(n) * time.Hour), true
	case "day":
		return now.AddDate(0, 0, -n), true
	case "week":
		return now.AddDate(0, 0, -7*n), true
	case "month":
		return now.AddDate(0, -n, 0), true
	case "year":
		return now.AddDate(-n, 0, 0), true
	}
	return time.Time{}, false
}

// flexTime decodes a date that may be null, a string in any layout
// parseTime knows, or a number of Unix seconds. Unreadable dates decode to
// the zero time rather than failing the whole response.
type flexTime struct{ time.Time }

func (t *flexTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return nil
		}
	} else {
		s = string(b)
	}
	if v, ok := parseTime(s, time.Now()); ok {
		t.Time = v
	}
	return nil
}

// flexFloat decodes a number that may arrive as a JSON number, a numeric
// string ("1.67", as Tavily's documentation shows for response_time) or
// null.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			*f = flexFloat(v)
		}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*f = flexFloat(v)
	return nil
}
