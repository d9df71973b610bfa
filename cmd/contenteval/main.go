// Command contenteval is the content evaluation server and its operator CLI.
package main

import (
	"context"
	"os"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "rules":
			os.Exit(runRules(ctx, os.Args[2:], os.Stdout, os.Stderr))
		case "hash":
			os.Exit(runHash(ctx, os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(2)
}
