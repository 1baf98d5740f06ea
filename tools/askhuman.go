package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/schemas"
)

// ErrNoHuman is returned by an Asker when nobody can answer (the input was
// closed, the run is unattended). ask_human then tells the model to go on
// with its best judgement.
var ErrNoHuman = errors.New("tools: no human is available to answer")

// Asker puts a question to a human and returns the answer.
//
// TerminalAsker asks on a terminal. An agent that runs with a checkpointer
// (nodes.AgentConfig.Checkpointer) does not call the Asker: it answers
// ask_human calls in a node of its own that pauses the run (a graph
// interrupt) until the answer is given, even in another process.
type Asker interface {
	// Ask blocks until the human answers or ctx is done. It returns
	// ErrNoHuman when nobody can answer.
	Ask(ctx context.Context, question string) (string, error)
}

// AskHumanOptions configure the ask_human tool.
type AskHumanOptions struct {
	// Asker reaches the human. Required.
	Asker Asker
	// MaxAnswerBytes caps the answer passed to the model (default 16000).
	MaxAnswerBytes int
}

type askArgs struct {
	Question string `json:"question" jsonschema:"The question for the user: specific, self-contained, one question at a time."`
}

// NewAskHuman returns the ask_human tool. Its calls have no time bound in
// a collection (see Bounded): a person takes the time they take, and
// cancelling the run still stops the wait.
func NewAskHuman(opts AskHumanOptions) (Tool, error) {
	if opts.Asker == nil {
		return nil, errors.New("tools: NewAskHuman: AskHumanOptions.Asker is required (NewTerminalAsker asks on a terminal)")
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = DefaultMaxOutputBytes
	}
	t, err := Func(AskHumanName, askHumanDescription, func(ctx context.Context, a askArgs) (Result, error) {
		q := strings.TrimSpace(a.Question)
		if q == "" {
			return Failf("the question is empty"), nil
		}
		answer, err := opts.Asker.Ask(ctx, q)
		if errors.Is(err, ErrNoHuman) {
			return Failf("no human is available to answer; continue with your best judgement and state your assumptions"), nil
		}
		if err != nil {
			return Result{}, err
		}
		return AskHumanAnswer(answer, opts.MaxAnswerBytes), nil
	})
	if err != nil {
		return nil, err
	}
	return WithTimeout(t, 0), nil
}

const askHumanDescription = "Ask the user a question and wait for the answer. Use it only for information or a decision that only the user can give (a preference, a missing detail, an approval); do not use it to report progress."

// ParseAskHuman reads the question of an ask_human call, with the tool's own
// validation. An empty question is an error.
func ParseAskHuman(call schemas.ToolCall) (string, error) {
	if call.Name != AskHumanName {
		return "", fmt.Errorf("tools: ParseAskHuman: call of %q is not an %s call", call.Name, AskHumanName)
	}
	a, err := MustFunc(AskHumanName, askHumanDescription, func(context.Context, askArgs) (Result, error) {
		return Result{}, nil
	}).Decode(call.Arguments)
	if err != nil {
		return "", err
	}
	if q := strings.TrimSpace(a.Question); q != "" {
		return q, nil
	}
	return "", errors.New("the question is empty")
}

// AskHumanAnswer is what ask_human tells the model of the user's answer: the
// answer cleaned of control characters and cut to maxBytes (≤ 0: the
// default, DefaultMaxOutputBytes).
func AskHumanAnswer(answer string, maxBytes int) Result {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	answer = strings.TrimSpace(cleanText(answer))
	if answer == "" {
		return Text("(the user gave an empty answer)")
	}
	return Text("The user answered: " + truncateText(answer, maxBytes))
}

// MaxTerminalAnswerBytes caps one answer line read by TerminalAsker; the
// rest of a longer line is discarded.
const MaxTerminalAnswerBytes = 64 << 10

// TerminalAsker asks questions on a terminal: it writes the question to Out
// and reads one line from In as the answer. Questions are asked one at a
// time. It is safe for concurrent use.
//
// Ask honours ctx: it returns when ctx is done even though a read is in
// progress. If In supports read deadlines (an *os.File pipe, a net.Conn),
// the read is interrupted; otherwise — a plain terminal — it stays pending
// in the background and the next Ask takes it over, so no input is read
// twice and a line typed while no question is open is discarded.
type TerminalAsker struct {
	in  io.Reader
	br  *bufio.Reader
	out io.Writer
	sem chan struct{} // one question at a time

	pending chan lineResult // a read left in flight by a cancelled Ask
}

type lineResult struct {
	line string
	err  error
}

// NewTerminalAsker returns an Asker reading answers from in and writing
// questions to out (typically os.Stdin and os.Stderr).
func NewTerminalAsker(in io.Reader, out io.Writer) *TerminalAsker {
	return &TerminalAsker{in: in, br: bufio.NewReader(in), out: out, sem: make(chan struct{}, 1)}
}

// Ask implements Asker. The question is cleaned of control characters
// before it is shown (it comes from a model and must not drive the
// terminal). An input that ends before any answer gives ErrNoHuman.
func (a *TerminalAsker) Ask(ctx context.Context, question string) (string, error) {
	return a.AskAs(ctx, "question from the agent", question)
}

// AskAs is Ask with another heading above the question (Ask's is "question
// from the agent"), for other kinds of question asked on the same terminal.
func (a *TerminalAsker) AskAs(ctx context.Context, heading, question string) (string, error) {
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-a.sem }()

	if a.pending != nil {
		select {
		case r := <-a.pending: // typed while no question was open: answers nothing
			a.pending = nil
			if r.err != nil && !isTimeout(r.err) {
				return "", a.readError(r.err)
			}
		default:
		}
	}
	if _, err := fmt.Fprintf(a.out, "\n[%s]\n%s\n> ", cleanText(heading), cleanText(question)); err != nil {
		return "", fmt.Errorf("tools: writing the question: %w", err)
	}
	if a.pending == nil {
		ch := make(chan lineResult, 1)
		go func() {
			line, err := readAnswerLine(a.br)
			ch <- lineResult{line, err}
		}()
		a.pending = ch
	}
	select {
	case r := <-a.pending:
		a.pending = nil
		if r.err != nil && (r.line == "" || !errors.Is(r.err, io.EOF)) {
			return "", a.readError(r.err)
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		if d, ok := a.in.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
			<-a.pending // the read returns now; whatever it got answers nothing
			a.pending = nil
			_ = d.SetReadDeadline(time.Time{})
		}
		fmt.Fprintln(a.out)
		return "", ctx.Err()
	}
}

func (a *TerminalAsker) readError(err error) error {
	if errors.Is(err, io.EOF) {
		return ErrNoHuman
	}
	return fmt.Errorf("tools: reading the answer: %w", err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// readAnswerLine reads one line, keeping at most MaxTerminalAnswerBytes.
func readAnswerLine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		chunk, err := br.ReadSlice('\n')
		if room := MaxTerminalAnswerBytes - b.Len(); room > 0 {
			b.Write(chunk[:min(len(chunk), room)])
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return b.String(), err
	}
}
