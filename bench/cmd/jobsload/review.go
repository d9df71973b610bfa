package main

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// createReviewQueues makes n review queues of the policy, each routing
// one label the load's jobs never match (label-00, label-01, ...: the
// jobs' text holds label-07's phrase), so that every job pays routing's
// check and enters no queue; with match, the first queue routes label-07
// instead, and every job enters it.
func createReviewQueues(client *http.Client, base, token, policyID string, n int, match bool) error {
	hdr := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	for i := range n {
		label := fmt.Sprintf("label-%02d", i)
		if i >= 7 {
			label = fmt.Sprintf("label-%02d", i+1)
		}
		if match && i == 0 {
			label = "label-07"
		}
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("bench-%d", i), "routes": []map[string]any{
			{"policyId": policyID, "label": label, "minScore": 0.5, "outcomes": []string{"OUTCOME_TRUE"}}}})
		status, answer, err := do(client, base+"/v1/review-queues", hdr, body)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("review queue: %d %s %v", status, answer, err)
		}
	}
	return nil
}
