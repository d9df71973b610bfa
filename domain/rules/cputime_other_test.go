//go:build !unix

package rules

func processCPU() int64 { return 0 }
