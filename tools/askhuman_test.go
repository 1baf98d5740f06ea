package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the asker and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// askedWriter signals on asked each time a question has been written, i.e.
// when Ask is about to wait for the answer.
type askedWriter struct {
	asked chan struct{}
}

func newAskedWriter() *askedWriter { return &askedWriter{asked: make(chan struct{}, 16)} }

func (w *askedWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("> ")) {
		w.asked <- struct{}{}
	}
	return len(p), nil
}

// cancelPendingAsk asks a question, cancels it once it is waiting for the
// answer, and checks that Ask returned the cancellation.
func cancelPendingAsk(t *testing.T, in io.Reader) (*TerminalAsker, *askedWriter) {
	t.Helper()
	w := newAskedWriter()
	a := NewTerminalAsker(in, w)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.Ask(ctx, "first?")
		errc <- err
	}()
	<-w.asked
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("Ask did not honour cancellation")
	}
	return a, w
}

func TestTerminalAsker(t *testing.T) {
	var out syncBuffer
	a := NewTerminalAsker(strings.NewReader("blue\r\nlast line without newline"), &out)
	ans, err := a.Ask(context.Background(), "Favourite colour?\x1b[2J")
	require.NoError(t, err)
	assert.Equal(t, "blue", ans)
	assert.Contains(t, out.String(), "Favourite colour?")
	assert.NotContains(t, out.String(), "\x1b", "escape sequences from the model never reach the terminal")

	ans, err = a.Ask(context.Background(), "And?")
	require.NoError(t, err)
	assert.Equal(t, "last line without newline", ans)

	_, err = a.Ask(context.Background(), "Anyone?")
	assert.ErrorIs(t, err, ErrNoHuman)
}

func TestTerminalAskerLongLine(t *testing.T) {
	long := strings.Repeat("x", MaxTerminalAnswerBytes+100)
	a := NewTerminalAsker(strings.NewReader(long+"\nnext\n"), io.Discard)
	ans, err := a.Ask(context.Background(), "q")
	require.NoError(t, err)
	assert.Len(t, ans, MaxTerminalAnswerBytes)
	ans, err = a.Ask(context.Background(), "q")
	require.NoError(t, err)
	assert.Equal(t, "next", ans, "the rest of the long line was discarded")
}

func TestTerminalAskerCancelWithoutDeadlines(t *testing.T) {
	pr, pw := io.Pipe() // no read deadlines: the read stays pending
	defer pw.Close()
	a, w := cancelPendingAsk(t, pr)

	// The next question takes over the pending read.
	ansc := make(chan string, 1)
	go func() {
		ans, err := a.Ask(context.Background(), "second?")
		assert.NoError(t, err)
		ansc <- ans
	}()
	<-w.asked // answering before the question is shown would answer nothing
	_, err := pw.Write([]byte("yes\n"))
	require.NoError(t, err)
	select {
	case ans := <-ansc:
		assert.Equal(t, "yes", ans)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
}

func TestTerminalAskerDropsAnswerTypedBetweenQuestions(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	a, w := cancelPendingAsk(t, pr)
	_, err := pw.Write([]byte("late answer\n")) // completes the pending read
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(a.pending) == 1 }, 30*time.Second, time.Millisecond)

	ansc := make(chan string, 1)
	go func() {
		ans, err := a.Ask(context.Background(), "second?")
		assert.NoError(t, err)
		ansc <- ans
	}()
	<-w.asked
	_, err = pw.Write([]byte("fresh answer\n"))
	require.NoError(t, err)
	select {
	case ans := <-ansc:
		assert.Equal(t, "fresh answer", ans)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
}

func TestTerminalAskerCancelInterruptsDeadlineReaders(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	a := NewTerminalAsker(pr, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = a.Ask(ctx, "q?")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, a.pending, "the read was interrupted, nothing is left running")

	_, err = pw.Write([]byte("after\n"))
	require.NoError(t, err)
	ans, err := a.Ask(context.Background(), "again?")
	require.NoError(t, err)
	assert.Equal(t, "after", ans)
}

type fakeAsker struct {
	answer string
	err    error
	got    string
}

func (f *fakeAsker) Ask(_ context.Context, q string) (string, error) {
	f.got = q
	return f.answer, f.err
}

func TestAskHumanTool(t *testing.T) {
	boom := errors.New("terminal gone")
	tests := []struct {
		name     string
		asker    *fakeAsker
		question string
		want     string
		wantFail string
		wantErr  error
	}{
		{name: "answer", asker: &fakeAsker{answer: "  use metric units \n"}, question: "Units?", want: "The user answered: use metric units"},
		{name: "empty answer", asker: &fakeAsker{answer: " "}, question: "Units?", want: "(the user gave an empty answer)"},
		{name: "nobody there", asker: &fakeAsker{err: ErrNoHuman}, question: "Units?", wantFail: "no human is available"},
		{name: "empty question", asker: &fakeAsker{}, question: "  ", wantFail: "the question is empty"},
		{name: "asker failure", asker: &fakeAsker{err: boom}, question: "Units?", wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := NewAskHuman(AskHumanOptions{Asker: tt.asker})
			require.NoError(t, err)
			args, _ := json.Marshal(map[string]string{"question": tt.question})
			res, err := tool.Run(context.Background(), args)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Output)
			if tt.wantFail != "" {
				assert.Contains(t, res.Error, tt.wantFail)
			} else {
				assert.False(t, res.Failed(), res.Error)
				assert.Equal(t, strings.TrimSpace(tt.question), tt.asker.got)
			}
		})
	}
	_, err := NewAskHuman(AskHumanOptions{})
	assert.ErrorContains(t, err, "Asker is required")
}
