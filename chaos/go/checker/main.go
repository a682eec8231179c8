// Command checker checks a metalog client history for linearizability with Porcupine.
//
//	checker [-timeout 5m] HISTORY.json
//
// It prints one JSON line {"result": "ok"|"refuted"|"unknown", ...} and exits
// 0 (ok), 1 (refuted: Porcupine's visualisation is written next to the
// history, as HISTORY.html), 2 (unknown: the search timed out) or 3 (bad input).
// The history format is written by chaos.history (Python).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Record is one client operation of the history file.
type Record struct {
	Client int    `json:"client"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return *int64 `json:"return"` // null: the outcome is unknown
}

// History is the file chaos.history writes.
type History struct {
	Families   [][2]string `json:"families"`
	Operations []Record    `json:"operations"`
}

// Verdict is what the checker prints.
type Verdict struct {
	Result        string `json:"result"`
	Operations    int    `json:"operations"`
	Unknown       int    `json:"unknown"`
	Families      int    `json:"families"`
	Visualization string `json:"visualization,omitempty"`
	Error         string `json:"error,omitempty"`
}

func load(path string) (History, error) {
	var h History
	raw, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("%s is not a history: %w", path, err)
	}
	for i, r := range h.Operations {
		if r.Input.Family < 0 || r.Input.Family >= len(h.Families) || r.Input.Name < 0 || r.Input.Name > 1 {
			return h, fmt.Errorf("operation %d names family %d name %d: the history has %d families of 2 names",
				i, r.Input.Family, r.Input.Name, len(h.Families))
		}
	}
	return h, nil
}

// operations turns records into Porcupine's operations; a write of unknown
// outcome returns at the end of the history (it may take effect at any point
// after its call); a read without an answer is left out.
func operations(h History) ([]porcupine.Operation, int) {
	var end int64
	for _, r := range h.Operations {
		if r.Call > end {
			end = r.Call
		}
		if r.Return != nil && *r.Return > end {
			end = *r.Return
		}
	}
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	unknown := 0
	for _, r := range h.Operations {
		if r.Input.Op == "read" && (r.Return == nil || r.Output.Outcome == "unknown") {
			continue // a read that got no answer constrains nothing (Jepsen drops them too)
		}
		ret := end + 1
		if r.Return != nil && r.Output.Outcome != "unknown" {
			ret = *r.Return
		} else {
			unknown++
			r.Output.Outcome = "unknown"
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: r.Input, Call: r.Call,
			Output: r.Output, Return: ret})
	}
	return ops, unknown
}

func model(families [][2]string) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			parts := make([][]porcupine.Operation, len(families))
			for _, op := range history {
				f := op.Input.(Input).Family
				parts[f] = append(parts[f], op)
			}
			var nonEmpty [][]porcupine.Operation
			for _, p := range parts {
				if len(p) > 0 {
					nonEmpty = append(nonEmpty, p)
				}
			}
			return nonEmpty
		},
		Init: func() []interface{} { return []interface{}{State{}} },
		Step: func(state, input, output interface{}) []interface{} {
			var next []interface{}
			for _, s := range step(state.(State), input.(Input), output.(Output)) {
				next = append(next, s)
			}
			return next
		},
		Equal: func(a, b interface{}) bool { return a.(State) == b.(State) },
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(Input), output.(Output)
			names := families[in.Family]
			call := in.Op + " " + names[in.Name]
			if in.Op == "rename" {
				call += " -> " + names[1-in.Name]
			}
			if in.Expected != Unknown {
				call += fmt.Sprintf(" @v%d", in.Expected)
			}
			switch {
			case out.Outcome == "unknown":
				return call + " ⇒ unknown"
			case out.Outcome == "rejected":
				return fmt.Sprintf("%s ⇒ %s (current v%d)", call, out.Error, out.Version)
			case in.Op == "read":
				return call + " ⇒ " + describeSlot(names[0], out.Read[0]) + ", " + describeSlot(names[1], out.Read[1])
			}
			return fmt.Sprintf("%s ⇒ ok id %d v%d", call, out.ID, out.Version)
		},
		DescribeState: func(state interface{}) string {
			s := state.(State)
			parts := []string{}
			for i, slot := range s.Names {
				parts = append(parts, describeSlot(fmt.Sprintf("name %d", i), slot))
			}
			return strings.Join(parts, "; ")
		},
	}
	return m.ToModel()
}

func main() {
	timeout := flag.Duration("timeout", 5*time.Minute, "give up (result unknown) after this long")
	flag.Parse()
	emit := func(v Verdict, code int) {
		line, _ := json.Marshal(v)
		fmt.Println(string(line))
		os.Exit(code)
	}
	if flag.NArg() != 1 {
		emit(Verdict{Result: "error", Error: "usage: checker [-timeout D] HISTORY.json"}, 3)
	}
	path := flag.Arg(0)
	h, err := load(path)
	if err != nil {
		emit(Verdict{Result: "error", Error: err.Error()}, 3)
	}
	ops, unknown := operations(h)
	m := model(h.Families)
	result, info := porcupine.CheckOperationsVerbose(m, ops, *timeout)
	v := Verdict{Operations: len(ops), Unknown: unknown, Families: len(h.Families)}
	switch result {
	case porcupine.Ok:
		v.Result = "ok"
		emit(v, 0)
	case porcupine.Illegal:
		v.Result = "refuted"
		v.Visualization = strings.TrimSuffix(path, ".json") + ".html"
		if err := porcupine.VisualizePath(m, info, v.Visualization); err != nil {
			v.Error = err.Error()
		}
		emit(v, 1)
	default:
		v.Result = "unknown"
		emit(v, 2)
	}
}
