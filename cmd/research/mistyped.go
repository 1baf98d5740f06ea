package main

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A research run costs money, so a command line whose first word is a
// misspelt command ("research agnet "do something"", "research shwo k3f9")
// is refused before anything is set up, whatever follows it. The rule, also
// in docs/cli.md:
//
//   - The first argument counts only when it is a single word of letters
//     and hyphens given before any "--": `research -- agnet …` and
//     `research "agnet …"` (a quoted question with spaces) always research.
//   - A first argument followed by more arguments is a misspelt command when
//     it is one typo away from a command's name: two neighbouring letters
//     swapped (agnet, shwo), a letter doubled (aggent), a letter left out
//     inside the word (confg, agnt), or a letter struck on the key beside it
//     on the same keyboard row (agenr). The first letter is never changed
//     and nothing is added at the end, so that questions starting with
//     "how", "shows", "agents" or "server" research as usual. Names of
//     fewer than four letters (rm, mcp) only count swaps and doubled letters.
//   - A lone word is also a misspelt command when cobra would suggest a
//     command for it (one edit, two for words of five letters or more, or
//     the start of a name: "serv"): a one-word question is rarely meant.
//
// A misspelt command is refused with exit status 2, the command meant, and
// the line that researches the text instead.

// mistypedCommand refuses args (of the root command) that start with a
// misspelt command name; nil when they are a question.
func mistypedCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 || cmd.ArgsLenAtDash() == 0 || !isWord(args[0]) {
		return nil
	}
	word := strings.ToLower(args[0])
	var meant []string
	for _, name := range commandNames(cmd) {
		if name != word && isTypo(word, name) {
			meant = append(meant, name)
		}
	}
	if len(args) == 1 {
		// cobra's suggestions: one edit (two from five letters on) or
		// a prefix of a name.
		cmd.SuggestionsMinimumDistance = 1
		if utf8.RuneCountInString(word) >= 5 {
			cmd.SuggestionsMinimumDistance = 2
		}
		for _, s := range cmd.SuggestionsFor(args[0]) {
			if !slices.Contains(meant, s) {
				meant = append(meant, s)
			}
		}
	}
	if len(meant) == 0 {
		return nil
	}
	return usageErr("unknown command %q — did you mean research %s? To research the text, use research -- %s",
		args[0], strings.Join(meant, " or research "), shellQuote(strings.Join(args, " ")))
}

// commandNames are the names and aliases of cmd's subcommands, help and
// completion included.
func commandNames(cmd *cobra.Command) []string {
	names := []string{"help"}
	for _, sub := range cmd.Commands() {
		names = append(names, sub.Name())
		names = append(names, sub.Aliases...)
	}
	return names
}

// isWord reports whether s is a single word of letters and hyphens.
func isWord(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && r != '-' {
			return false
		}
	}
	return s != ""
}

// isTypo reports whether word is name with one typo, as the rule above
// defines it. Both are lower case.
func isTypo(word, name string) bool {
	w, n := []rune(word), []rune(name)
	long := len(n) >= 4
	switch {
	case len(w) == len(n):
		var diff []int
		for i := range n {
			if w[i] != n[i] {
				diff = append(diff, i)
			}
		}
		switch {
		case len(diff) == 2 && diff[1] == diff[0]+1 && w[diff[0]] == n[diff[1]] && w[diff[1]] == n[diff[0]]:
			return len(n) >= 3 // swapped: agnet, shwo, mpc (not "mr" for rm)
		case len(diff) == 1 && long && diff[0] > 0:
			return rowNeighbours(w[diff[0]], n[diff[0]]) // agenr, sgow
		}
	case len(w) == len(n)+1:
		// A letter doubled: aggent, showw.
		for i := range n {
			if string(w[:i+1]) == string(n[:i+1]) && w[i+1] == n[i] && string(w[i+2:]) == string(n[i+1:]) {
				return true
			}
		}
	case len(w) == len(n)-1 && long:
		// A letter left out inside the word: confg, agnt (not "how" for
		// show, nor "run" for runs).
		for i := 1; i < len(n)-1; i++ {
			if string(w[:i]) == string(n[:i]) && string(w[i:]) == string(n[i+1:]) {
				return true
			}
		}
	}
	return false
}

// keyRows are the letter rows of a QWERTY keyboard.
var keyRows = []string{"qwertyuiop", "asdfghjkl", "zxcvbnm"}

// rowNeighbours reports whether a and b are side by side on a keyboard row.
func rowNeighbours(a, b rune) bool {
	for _, row := range keyRows {
		i, j := strings.IndexRune(row, a), strings.IndexRune(row, b)
		if i >= 0 && j >= 0 && (i-j == 1 || j-i == 1) {
			return true
		}
	}
	return false
}

// shellQuote quotes s for a POSIX shell: in double quotes when nothing in
// it is special there, else in single quotes.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// questionArgs wraps the argument check of each of root's subcommands so
// that a question that starts with a command's name ("research graph
// databases vs SQL") is told how to research it.
func questionArgs(root *cobra.Command) {
	for _, sub := range root.Commands() {
		check := sub.Args
		if check == nil {
			continue
		}
		sub.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if err == nil || len(args) == 0 {
				return err
			}
			return usageErr("%s %v — to research the text, use research -- %s", cmd.Name(), argsError(err),
				shellQuote(strings.Join(append([]string{cmd.Name()}, args...), " ")))
		}
	}
}

// argsError rewrites cobra's argument errors for people.
func argsError(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown command"):
		return "takes no arguments"
	case strings.HasPrefix(msg, "accepts "):
		return fmt.Sprintf("takes %s", strings.TrimPrefix(msg, "accepts "))
	}
	return msg
}

// flagError is the error of a flag cobra could not parse, with the flags
// of cmd the user may have meant ("--loop": did you mean --loops?).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if meant := similarFlags(cmd, name); len(meant) > 0 {
			msg += ": did you mean --" + strings.Join(meant, " or --") + "?"
		}
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())}
}

// similarFlags are the names of cmd's flags (its own and the inherited
// ones) at most two edits from name, or starting with it.
func similarFlags(cmd *cobra.Command, name string) []string {
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := editDistance(name, f.Name)
		if d <= 2 && d < len(f.Name)/2+1 || len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			out = append(out, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	slices.SortFunc(out, func(a, b string) int {
		if c := editDistance(name, a) - editDistance(name, b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out[:min(len(out), 3)]
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
