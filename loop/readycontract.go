package loop

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// ReadyContract is the spec's Ready Contract, read from a task description:
// Objective, Artifact, and the Verify commands that prove the task is done.
type ReadyContract struct {
	Objective string
	Artifact  string
	Verify    []string
}

// fieldRE matches a Ready Contract field header in the forms people write them:
// "Verify: cmd", "- Verify:", "**Verify:** cmd", "- **Artifact**: path".
var fieldRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\s*(?:[-*]\s+)?(?:\*\*)?(objective|artifact|verify|notes)(?:\s*\(optional\))?(?:\*\*)?\s*:\s*(?:\*\*)?\s*(.*)$`)
})

var listItemRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$`) })

var backtickRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`]+)`") })

// ParseReadyContract reads the Ready Contract fields from a description. Verify items may be
// inline after the header, list items below it, or lines of a fenced code block; an item with
// backtick spans contributes each span as a command, otherwise the whole item is the command.
func ParseReadyContract(description string) ReadyContract {
	var rc ReadyContract
	field, inFence, items := "", false, 0
	for _, line := range strings.Split(description, "\n") {
		if field == "verify" && strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			if cmd := strings.TrimSpace(line); cmd != "" {
				rc.Verify = append(rc.Verify, cmd)
			}
			continue
		}
		if m := fieldRE().FindStringSubmatch(line); m != nil {
			field, items = strings.ToLower(m[1]), 0
			items += rc.add(field, strings.TrimSpace(m[2]))
			continue
		}
		if field == "" {
			continue
		}
		if m := listItemRE().FindStringSubmatch(line); m != nil {
			items += rc.add(field, strings.TrimSpace(m[1]))
			continue
		}
		blank := strings.TrimSpace(line) == ""
		if blank && items == 0 {
			continue // a blank line between a header and its items
		}
		if !blank && field != "verify" {
			items += rc.add(field, strings.TrimSpace(line))
			continue
		}
		field = ""
	}
	return rc
}

// add records one item of a field and returns how many it added (0 for empty text).
func (rc *ReadyContract) add(field, text string) int {
	if text == "" {
		return 0
	}
	switch field {
	case "objective":
		rc.Objective = strings.TrimSpace(rc.Objective + " " + text)
	case "artifact":
		rc.Artifact = strings.TrimSpace(rc.Artifact + " " + text)
	case "verify":
		rc.Verify = append(rc.Verify, commandsIn(text)...)
	}
	return 1
}

// commandsIn returns the backtick spans of text, or text itself when it has none.
func commandsIn(text string) []string {
	spans := backtickRE().FindAllStringSubmatch(text, -1)
	if len(spans) == 0 {
		return []string{text}
	}
	cmds := make([]string, 0, len(spans))
	for _, s := range spans {
		if c := strings.TrimSpace(s[1]); c != "" {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// ParseAcceptance turns a task's acceptance text into baseline criteria AC-1..n: one per list
// item (checkbox or not), or the whole text as one criterion when it has no list. Backtick
// spans in an item become its verify hints, which the built-in Plan runs as its checks.
func ParseAcceptance(text string) []AcceptanceCriterion {
	var items []string
	for _, line := range strings.Split(text, "\n") {
		if m := listItemRE().FindStringSubmatch(line); m != nil {
			items = append(items, strings.TrimSpace(m[1]))
		} else if t := strings.TrimSpace(line); t != "" && len(items) > 0 {
			items[len(items)-1] += " " + t
		}
	}
	if len(items) == 0 {
		if t := strings.TrimSpace(text); t != "" {
			items = []string{strings.Join(strings.Fields(t), " ")}
		}
	}
	acs := make([]AcceptanceCriterion, 0, len(items))
	for i, it := range items {
		ac := AcceptanceCriterion{ID: fmt.Sprintf("AC-%d", i+1), Text: it, VerifyHints: []string{}}
		for _, s := range backtickRE().FindAllStringSubmatch(it, -1) {
			ac.VerifyHints = append(ac.VerifyHints, strings.TrimSpace(s[1]))
		}
		acs = append(acs, ac)
	}
	return acs
}
