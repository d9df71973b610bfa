// Package policies is the policy-first aggregate: policies and their
// versions, compiled once and cached, and the active version a job is
// evaluated with. The policy entities and store port are the kernel's
// (domain).
package policies
