package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts read what git-norma recorded through `git norma status --json`, the public
// shape, never the database's tables: a schema change breaks no script that only reads.
//
//	runs [-count] [-last] [FIELD...]               each run, oldest first: its FIELDs joined by "|"
//	steps [-run ID] [-index N] FIELD...            each step of each run, in order
//	events [-count] [-like TEXT] TYPE[,TYPE] [FIELD...]  each event of those types (* for all), in order
//
// FIELDs are the JSON keys of status --json (a run's: status, verdict, iteration,
// current_step_index, task_id, goal, run_id, kind, ...; a step's: step_index, role, iteration,
// status, summary, ...; an event's: type, message, ...).

// startQuery begins a runs, steps or events command: the status --json calls it makes must
// not be what the script's next stdout assertion reads when the answer is empty, and an
// answer is not a success or failure to negate.
func startQuery(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s prints an answer; assert on its stdout instead of negating it", name)
	}
	_ = ts.Stdout() // from here on stdout is this command's, empty if it prints nothing
}

// runDetail is one run as `git norma status <run> --json` prints it.
type runDetail struct {
	Run    map[string]any   `json:"run"`
	Steps  []map[string]any `json:"steps"`
	Events []map[string]any `json:"events"`
}

// recordedRuns reads every run, oldest first, with its steps and events when detail.
func recordedRuns(ts *testscript.TestScript, detail bool) []runDetail {
	ts.Check(ts.Exec("git-norma", "status", "--json", "-n", "0"))
	var list struct {
		Runs []map[string]any `json:"runs"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &list))
	slices.Reverse(list.Runs) // status lists the newest first
	runs := make([]runDetail, len(list.Runs))
	for i, r := range list.Runs {
		runs[i].Run = r
		if detail {
			ts.Check(ts.Exec("git-norma", "status", fmt.Sprint(r["run_id"]), "--json"))
			ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &runs[i]))
		}
	}
	return runs
}

// fieldsOf joins the fields of an object with "|", as the sqlite shell prints a row.
func fieldsOf(ts *testscript.TestScript, obj map[string]any, fields []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		v, ok := obj[f]
		if !ok {
			ts.Fatalf("no field %q in %v", f, obj)
		}
		switch v := v.(type) {
		case nil:
		case string:
			parts[i] = v
		case float64:
			parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			data, _ := json.Marshal(v)
			parts[i] = string(data)
		}
	}
	return strings.Join(parts, "|")
}

func cmdRuns(ts *testscript.TestScript, neg bool, args []string) {
	startQuery(ts, neg, "runs")
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	count := fs.Bool("count", false, "print how many runs there are")
	last := fs.Bool("last", false, "only the newest run")
	ts.Check(fs.Parse(args))
	runs := recordedRuns(ts, false)
	if *count {
		fmt.Fprintln(ts.Stdout(), len(runs))
		return
	}
	if *last && len(runs) > 0 {
		runs = runs[len(runs)-1:]
	}
	for _, r := range runs {
		fmt.Fprintln(ts.Stdout(), fieldsOf(ts, r.Run, fs.Args()))
	}
}

func cmdSteps(ts *testscript.TestScript, neg bool, args []string) {
	startQuery(ts, neg, "steps")
	fs := flag.NewFlagSet("steps", flag.ContinueOnError)
	run := fs.String("run", "", "only the steps of this run")
	index := fs.Int("index", 0, "only the steps with this index")
	ts.Check(fs.Parse(args))
	for _, r := range recordedRuns(ts, true) {
		if *run != "" && r.Run["run_id"] != *run {
			continue
		}
		for _, s := range r.Steps {
			if *index != 0 && s["step_index"] != float64(*index) {
				continue
			}
			fmt.Fprintln(ts.Stdout(), fieldsOf(ts, s, fs.Args()))
		}
	}
}

func cmdEvents(ts *testscript.TestScript, neg bool, args []string) {
	startQuery(ts, neg, "events")
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	count := fs.Bool("count", false, "print how many events there are")
	like := fs.String("like", "", "only the events whose message contains this")
	ts.Check(fs.Parse(args))
	if fs.NArg() < 1 {
		ts.Fatalf("usage: events [-count] [-like TEXT] TYPE[,TYPE] [FIELD...]")
	}
	types, fields := strings.Split(fs.Arg(0), ","), fs.Args()[1:]
	if len(fields) == 0 {
		fields = []string{"message"}
	}
	n := 0
	for _, r := range recordedRuns(ts, true) {
		for _, e := range r.Events {
			if fs.Arg(0) != "*" && !slices.Contains(types, fmt.Sprint(e["type"])) {
				continue
			}
			if !strings.Contains(fmt.Sprint(e["message"]), *like) {
				continue
			}
			n++
			if !*count {
				fmt.Fprintln(ts.Stdout(), fieldsOf(ts, e, fields))
			}
		}
	}
	if *count {
		fmt.Fprintln(ts.Stdout(), n)
	}
}
