package browser

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestElementLine(t *testing.T) {
	yes, no := true, false
	val := func(s string) *string { return &s }
	tests := []struct {
		e    element
		want string
	}{
		{element{I: 3, Role: "button", Name: "Place order", InView: true, Tag: "button"}, `*[3] button "Place order"`},
		{element{I: 4, Role: "link", Name: "Docs", Href: "/docs", Locator: `a[href="/docs"]`, Tag: "a"}, ` [4] link "Docs" → /docs (a[href="/docs"])`},
		{element{I: 5, Role: "textbox", Name: "Email", Tag: "input", Type: "email", Value: val("ada@example.com"), Locator: "#email", InView: true},
			`*[5] textbox "Email" type=email value="ada@example.com" (#email)`},
		{element{I: 6, Role: "checkbox", Name: "Gift", Tag: "input", Type: "checkbox", Checked: &yes}, ` [6] checkbox "Gift" checked`},
		{element{I: 7, Role: "radio", Tag: "input", Type: "radio", Checked: &no, Disabled: true}, ` [7] radio unchecked disabled`},
		{element{I: 8, Role: "combobox", Name: "Size", Tag: "select", Value: val("M"), Options: []string{"S", "M"}, MoreOptions: 3},
			` [8] combobox "Size" value="M" options: "S" "M" (+3 more)`},
		{element{I: 9, Role: "link", Name: "a \"quoted\"\nname", Tag: "a"}, ` [9] link "a \"quoted\" name"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, elementLine(tt.e))
	}
	long := elementLine(element{I: 1, Role: "button", Name: strings.Repeat("x", 500), Locator: strings.Repeat("y", 500)})
	assert.LessOrEqual(t, utf8.RuneCountInString(long), 240)
}

func TestCutRunes(t *testing.T) {
	assert.Equal(t, "short", cutRunes("short", 100))
	cut := cutRunes(strings.Repeat("é", 1000), 100)
	assert.Equal(t, 100, utf8.RuneCountInString(cut))
	assert.True(t, strings.HasSuffix(cut, "[state cut to its size limit]"))
}

func TestFormatContent(t *testing.T) {
	var page strings.Builder
	for i := range 200 {
		fmt.Fprintf(&page, "Paragraph %d is filler text.\n\n", i)
		if i == 150 {
			page.WriteString("Shipping to Norway costs 9 euros.\n\n")
		}
	}
	content := strings.TrimSpace(page.String())

	text, failed := formatContent("Help", "https://shop.example/help", content, "shipping cost to Norway", 0, 500)
	require.False(t, failed)
	assert.Contains(t, text, "Goal: shipping cost to Norway")
	assert.Contains(t, text, "shown are the parts that match the goal")
	assert.Contains(t, text, "Shipping to Norway costs 9 euros.")
	assert.NotContains(t, text, "Paragraph 3 is filler")

	// No block matches: the page from its start, cut, with the offset to
	// read on.
	text, _ = formatContent("Help", "https://shop.example/help", content, "refunds", 0, 500)
	assert.Contains(t, text, "Paragraph 0 is filler text.")
	assert.Contains(t, text, "call extract_content with offset 500 to read on")
	text, _ = formatContent("Help", "https://shop.example/help", content, "", 500, 500)
	assert.Contains(t, text, "Showing characters 500 to 1000 of")
	text, failed = formatContent("Help", "https://shop.example/help", content, "", 1e6, 500)
	assert.True(t, failed)
	assert.Contains(t, text, "offset 1000000 is past the end")
	text, _ = formatContent("", "https://shop.example/empty", "", "x", 0, 500)
	assert.Contains(t, text, "(the page has no readable text content)")
	// A short page is shown whole, goal or not.
	text, _ = formatContent("T", "https://shop.example/", "One paragraph.", "shipping", 0, 500)
	assert.Contains(t, text, "\nOne paragraph.\n")
	assert.NotContains(t, text, "parts that match")
}

func TestGoalTerms(t *testing.T) {
	got := goalTerms("What is the price of the Blue Mug, in EUR? 2024")
	assert.Equal(t, map[string]bool{"price": true, "blue": true, "mug": true, "eur": true, "2024": true}, got)
}

// TestSweep: the directory of a session whose program died is removed
// (with its directory in /tmp); those of live programs, and directories
// without an owner, are left.
func TestSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	deadPID := dead.Process.Pid

	mk := func(name, owner string) string {
		d := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "profile"), 0o700))
		if owner != "" {
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600))
		}
		return d
	}
	extra, err := os.MkdirTemp("/tmp", "dgb-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(extra) })
	gone := mk(dirPrefix+"dead", strconv.Itoa(deadPID)+"\n"+extra)
	mine := mk(dirPrefix+"mine", strconv.Itoa(os.Getpid())+"\n")
	parent := mk(dirPrefix+"parent", strconv.Itoa(os.Getppid()))
	unknown := mk(dirPrefix+"unknown", "")
	other := mk("something-else", strconv.Itoa(deadPID))

	sweep(slog.New(slog.DiscardHandler))
	assert.NoDirExists(t, gone)
	assert.NoDirExists(t, extra)
	for _, d := range []string{mine, parent, unknown, other} {
		assert.DirExists(t, d)
	}
}

func TestFindChromium(t *testing.T) {
	_, err := FindChromium("/nonexistent/chromium")
	require.ErrorIs(t, err, ErrNoChromium)
	assert.Contains(t, err.Error(), "/nonexistent/chromium is not an executable")
	assert.Contains(t, err.Error(), "sudo apt-get install chromium")

	dir := t.TempDir()
	exe := filepath.Join(dir, "mychrome")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	got, err := FindChromium(exe)
	require.NoError(t, err)
	assert.Equal(t, exe, got)
	t.Setenv("PATH", dir)
	got, err = FindChromium("mychrome")
	require.NoError(t, err, "a name is looked up on PATH")
	assert.Equal(t, exe, got)
}
