package fakeproviders

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The eval's fakes: a research model and a judge that answer from the
// prompts alone, so that an eval over a local corpus runs end to end with
// no network — in-process (eval's tests wrap them in an llm.Model) and
// behind a fake OpenAI server (the CLI's tests).

// ResearchReply answers a deep-research prompt (schema is the structured
// output asked for, "" for text): the topic as the one query, a summary
// of the top source's sentences each citing it, a sufficient reflection,
// and an answer that copies the summaries. A careless model adds, after
// the faithful first sentence, a sentence with a wrong number (one more
// than the source's), one the source does not say, both citing it, and
// one citing nothing. ok is false for a prompt it does not know.
func ResearchReply(schema, prompt string, careless bool) (reply string, ok bool) {
	switch {
	case schema == "SearchQueryList":
		topic := prompt
		if i := strings.LastIndex(prompt, "Topic:"); i >= 0 {
			topic = prompt[i+len("Topic:"):]
		}
		b, _ := json.Marshal(map[string]any{"rationale": "one query covers it", "query": []string{strings.TrimSpace(topic)}})
		return string(b), true
	case schema == "Reflection":
		return SufficientReflection, true
	case strings.Contains(prompt, "Summarise what the sources below say"):
		m := sourceBodyRe.FindStringSubmatch(prompt)
		if m == nil {
			return "The sources do not cover the query.", true
		}
		label, sentences := m[1], SourceSentences(m[2])
		if len(sentences) == 0 {
			return "The sources do not cover the query.", true
		}
		var out []string
		if careless {
			out = append(out, cite(sentences[0], label))
			for _, s := range sentences[1:] {
				if wrong, changed := bumpNumber(s); changed {
					out = append(out, cite(wrong, label))
					break
				}
			}
			out = append(out, cite("It was first described by the ancient astronomer Hipparchus", label), "This topic is widely studied in schools.")
		} else {
			for _, s := range sentences {
				out = append(out, cite(s, label))
			}
		}
		return strings.Join(out, " "), true
	case strings.Contains(prompt, "Write a well-researched answer"):
		summaries := prompt
		if i := strings.LastIndex(prompt, "Summaries:"); i >= 0 {
			summaries = prompt[i+len("Summaries:"):]
		}
		var lines []string
		for _, l := range strings.Split(summaries, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || l == "---" || strings.HasPrefix(l, "<") {
				continue
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n\n"), true
	}
	return "", false
}

var sourceBodyRe = regexp.MustCompile(`(?s)<source label="(S\d+)"[^>]*>\n(.*?)\n</source>`)

func cite(sentence, label string) string {
	return strings.TrimRight(sentence, ".") + " [" + label + "]."
}

// SourceSentences are the sentences of a source's text, headings left out.
func SourceSentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, s := range regexp.MustCompile(`[.!?]\s+`).Split(line, -1) {
			if s = strings.TrimSpace(strings.TrimRight(s, ".")); len(strings.Fields(s)) >= 3 {
				out = append(out, s+".")
			}
		}
	}
	return out
}

// bumpNumber adds one to the first number of s.
func bumpNumber(s string) (string, bool) {
	loc := regexp.MustCompile(`\d+`).FindStringIndex(s)
	if loc == nil {
		return s, false
	}
	n, _ := strconv.Atoi(s[loc[0]:loc[1]])
	return s[:loc[0]] + strconv.Itoa(n+1) + s[loc[1]:], true
}

// JudgeReply answers the eval's judging prompts (schema ClaimVerdict or
// CorrectnessVerdict) by word overlap: a statement is supported when the
// passage has its words and numbers, contradicted when a number of it is
// missing from a passage that has the rest, else unsupported; an answer is
// correct when it has the reference's words and numbers, partially
// correct with half of them. ok is false for another prompt.
func JudgeReply(schema, prompt string) (reply string, ok bool) {
	switch schema {
	case "ClaimVerdict":
		statement := between(prompt, "<statement>", "</statement>")
		passage := between(prompt, "<passage>", "</passage>")
		words, nums := wordsAndNumbers(statement)
		have, haveNums := wordsAndNumbers(passage)
		label := "unsupported"
		switch share, numsOK := covered(words, have), subset(nums, haveNums); {
		case share >= 0.8 && numsOK:
			label = "supported"
		case share >= 0.6 && !numsOK:
			label = "contradicted"
		}
		return fmt.Sprintf(`{"label": %q, "reason": "word overlap %s"}`, label, label), true
	case "CorrectnessVerdict":
		ref := between(prompt, "<reference>", "</reference>")
		answer := between(prompt, "<passage>", "</passage>")
		words, nums := wordsAndNumbers(ref)
		have, haveNums := wordsAndNumbers(answer)
		verdict := "incorrect"
		share := covered(append(words, nums...), append(have, haveNums...))
		switch {
		case share >= 0.99:
			verdict = "correct"
		case share >= 0.5:
			verdict = "partially_correct"
		}
		return fmt.Sprintf(`{"verdict": %q, "reason": "covers %.0f%% of the reference"}`, verdict, share*100), true
	}
	return "", false
}

func between(s, open, close string) string {
	i := strings.LastIndex(s, open)
	if i < 0 {
		return ""
	}
	rest := s[i+len(open):]
	if j := strings.Index(rest, close); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var judgeStop = map[string]bool{"the": true, "and": true, "was": true, "for": true, "its": true, "with": true, "about": true, "that": true, "this": true, "from": true, "are": true, "after": true}

func wordsAndNumbers(s string) (words, nums []string) {
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		switch {
		case unicode.IsDigit([]rune(w)[0]):
			nums = append(nums, w)
		case len(w) >= 3 && !judgeStop[w]:
			words = append(words, w)
		}
	}
	return words, nums
}

func covered(want, have []string) float64 {
	if len(want) == 0 {
		return 1
	}
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	n := 0
	for _, w := range want {
		if set[w] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func subset(want, have []string) bool { return covered(want, have) == 1 }
