package main

// The dataset part: a 20-rule label version over the examples, run after run.

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// labelText is a 20-rule label of the built-in signals: exact phrases,
// fuzzy (obfuscation-tolerant) phrases and lexical concepts, as the jobs
// benchmark's policy mixes them.
func labelText() string {
	var b strings.Builder
	for i := range 20 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "=(\"forbidden phrase %d\")\n", i)
		case 1:
			fmt.Fprintf(&b, "~(\"spamword%d\")\n", i)
		default:
			fmt.Fprintf(&b, "\"violent threat %d\"\n", i)
		}
	}
	return b.String()
}

// exampleText is example i: about 400 bytes of prose; every third one
// carries a phrase of the label.
func exampleText(i int) string {
	t := fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog while the committee reviews the quarterly report ", i)
	t += strings.Repeat("and nobody expected the weather to change so quickly that afternoon ", 4)
	if i%3 == 0 {
		t += fmt.Sprintf(" forbidden phrase %d", (i/3%7)*3)
	}
	return t
}

type runView struct {
	DatasetRun struct {
		DatasetRunID string     `json:"datasetRunId"`
		State        string     `json:"state"`
		ExampleCount int        `json:"exampleCount"`
		TP           int        `json:"truePositives"`
		FP           int        `json:"falsePositives"`
		TN           int        `json:"trueNegatives"`
		FN           int        `json:"falseNegatives"`
		Failed       int        `json:"failed"`
		Created      time.Time  `json:"created"`
		Completed    *time.Time `json:"completed"`
	} `json:"datasetRun"`
}

func datasetRuns(s *server, o options, report *strings.Builder) error {
	var label struct {
		Label struct {
			LabelID string `json:"labelId"`
		} `json:"label"`
	}
	if err := s.call(http.MethodPost, "/v1/labels", s.labelTok, map[string]any{"name": "Bench"}, &label); err != nil {
		return err
	}
	id := label.Label.LabelID
	var version struct {
		LabelVersion struct {
			LabelVersionID string `json:"labelVersionId"`
		} `json:"labelVersion"`
	}
	if err := s.call(http.MethodPost, "/v1/labels/"+id+"/versions", s.labelTok, map[string]any{"text": labelText()}, &version); err != nil {
		return err
	}
	for from := 0; from < o.examples; from += 1000 {
		var ex []map[string]any
		for i := from; i < min(from+1000, o.examples); i++ {
			expected := "EVALUATION_RESULT_FALSE"
			if i%3 == 0 || i%10 == 1 {
				expected = "EVALUATION_RESULT_TRUE"
			}
			ex = append(ex, map[string]any{"contentData": map[string]string{"text": exampleText(i)}, "expectedOutcome": expected})
		}
		if err := s.call(http.MethodPost, "/v1/labels/"+id+"/examples", s.labelTok, map[string]any{"examples": ex}, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(report, "\nDataset runs: %d text examples (about 400 bytes each), a 20-rule label version (7 exact, 7 fuzzy, 6 concept rules), default server settings (8 job workers, chunks of 250 examples).\n\n", o.examples)
	fmt.Fprintf(report, "| run | examples | TP/FP/TN/FN/failed | server time (created to completed) | examples/s | client wall (POST to COMPLETED seen) | server CPU per example |\n|---|---|---|---|---|---|---|\n")
	var rates []float64
	for r := 1; r <= o.runs; r++ {
		cpu0 := bench.ProcessCPU(s.cmd.Process.Pid)
		start := time.Now()
		var created runView
		if err := s.call(http.MethodPost, "/v1/labels/"+id+"/versions/"+version.LabelVersion.LabelVersionID+"/dataset-runs", s.labelTok, map[string]any{}, &created); err != nil {
			return err
		}
		var got runView
		for {
			if err := s.call(http.MethodGet, "/v1/labels/"+id+"/dataset-runs/"+created.DatasetRun.DatasetRunID, s.labelTok, nil, &got); err != nil {
				return err
			}
			if st := got.DatasetRun.State; st == "DATASET_RUN_STATE_COMPLETED" || st == "DATASET_RUN_STATE_FAILED" {
				break
			}
			if time.Since(start) > 10*time.Minute {
				return fmt.Errorf("run %s did not finish", created.DatasetRun.DatasetRunID)
			}
			time.Sleep(5 * time.Millisecond)
		}
		wall := time.Since(start)
		cpu := bench.ProcessCPU(s.cmd.Process.Pid) - cpu0
		d := got.DatasetRun
		if d.State != "DATASET_RUN_STATE_COMPLETED" || d.Completed == nil || d.TP+d.FP+d.TN+d.FN+d.Failed != o.examples {
			return fmt.Errorf("run %s: %+v", d.DatasetRunID, d)
		}
		server := d.Completed.Sub(d.Created)
		rate := float64(o.examples) / server.Seconds()
		rates = append(rates, rate)
		fmt.Fprintf(report, "| %d | %d | %d/%d/%d/%d/%d | %s | %.0f | %s | %.1f µs |\n", r, d.ExampleCount, d.TP, d.FP, d.TN, d.FN, d.Failed,
			server.Round(time.Millisecond), rate, wall.Round(time.Millisecond), float64(cpu.Microseconds())/float64(o.examples))
	}
	sort.Float64s(rates)
	fmt.Fprintf(report, "\nMedian: **%.0f examples/s** (target >= 2,000).\n", rates[len(rates)/2])
	return nil
}
