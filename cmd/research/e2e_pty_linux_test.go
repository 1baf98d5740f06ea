package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the test writes a person's keystrokes to
// master, and the binary reads them from slave, its stdin, which is a
// terminal. What the terminal echoes is read from master and dropped.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): the terminal review test needs /dev/ptmx", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0), "unlocking the pty")
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err, "the pty's number")
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, m) }() // the echo
	t.Cleanup(func() { _ = s.Close(); _ = m.Close() })
	return m, s
}

// TestE2EReviewOnATerminal answers --review's pauses as a person at the
// terminal does: new queries at the first, Enter (approve) at the second.
func TestE2EReviewOnATerminal(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	master, slave := openPTY(t)
	p := startBinIn(t, slave, envv, "--review", "Wer gewann die Euro 2024?")
	const prompt = "[review the queries before they are searched]"

	p.waitCount(t, prompt, 1, 30*time.Second)
	assert.Contains(t, p.stderr.String(), "1. Euro 2024 Sieger\n  2. Euro 2024 Torschützenkönig")
	assert.Zero(t, callsWhere(g, func(r geminiRequest) bool { return r.grounded() }), "nothing searched before the review")
	// The person reads the queries for a while: the run's time includes it.
	const reading = 600 * time.Millisecond
	time.Sleep(reading)
	_, err := master.WriteString("Euro 2024 Finale; Euro 2024 Spanien\n")
	require.NoError(t, err)

	p.waitCount(t, prompt, 2, 30*time.Second)
	assert.Contains(t, p.stderr.String(), "Reflection 1 found missing: Die Anzahl der Tore fehlt.\n  1. Euro 2024 Tore Anzahl")
	_, err = master.WriteString("\n")
	require.NoError(t, err)

	res := p.wait(t, 30*time.Second)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "Spanien gewann die Euro 2024")
	// "Done in" is the command's time, the reviews included (it was the
	// last stretch only: "Done in 0.0s").
	m := regexp.MustCompile(`Done in (\d+\.\d)s · `).FindStringSubmatch(res.stderr)
	require.NotNil(t, m, res.stderr)
	took, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, reading.Seconds(), "the summary counts the time the person took")
	assertCitations(t, res.stdout, g.uris())
	assert.NotContains(t, res.stderr, "Paused:", "a run answered on the terminal never stops for research resume")
	for q, n := range map[string]int{"Euro 2024 Finale": 1, "Euro 2024 Spanien": 1, "Euro 2024 Tore Anzahl": 1, "Euro 2024 Sieger": 0} {
		assert.Equal(t, n, callsWhere(g, searchedFor(q)), "searches of %q", q)
	}
	assert.Equal(t, 1, callsWhere(g, func(r geminiRequest) bool { return r.schemaHas("query") }), "the queries were written once")

	id := runIDOf(t, res.stderr)
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*done`, runs.stdout)
}

// TestE2EAgentQuestionOnATerminal answers the agent's ask_human on the
// terminal with the default store, in a step that also makes another call:
// the run goes on where it paused (the sibling call runs once, every tool
// call gets its result — the fake refuses a request that breaks OpenAI's
// rule, as OpenAI does) and the answer reaches the model.
func TestE2EAgentQuestionOnATerminal(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	ask := oaCall{Name: "ask_human", Args: `{"question":"Which city should the notes cover?"}`}
	write := oaCall{Name: "str_replace_editor", Args: `{"command":"create","path":"draft.md","file_text":"draft\n"}`}
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		for _, r := range c.req.toolResults() {
			if strings.Contains(r, "The user answered: Lyon") {
				return oaReply{ToolCalls: []oaCall{terminate("success", "Notes about Lyon.")}}
			}
		}
		return oaReply{Content: "I need to know the city.", ToolCalls: []oaCall{ask, write}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	master, slave := openPTY(t)
	p := startBinIn(t, slave, envv, "agent", "--model", "openai:gpt-4.1-mini", "--workspace", ws, "Write city notes")
	p.waitStderr(t, "Which city should the notes cover?", 30*time.Second)
	_, err := master.WriteString("Lyon\n")
	require.NoError(t, err)
	res := p.wait(t, 60*time.Second)
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, "Notes about Lyon.\n", res.stdout)
	assert.NotContains(t, res.stderr, "must be followed by tool messages")
	data, err := os.ReadFile(ws + "/draft.md")
	require.NoError(t, err, "the call beside ask_human ran")
	assert.Equal(t, "draft\n", string(data))
	thinks := 0
	for _, r := range oa.all() {
		if strings.Contains(string(r.Body), `"tools"`) {
			thinks++
		}
	}
	assert.Equal(t, 2, thinks, "the first think step was not repeated")
	id := runIDOf(t, res.stderr)
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*done`, runs.stdout)
}
