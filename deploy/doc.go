// Package deploy holds the tests of the deployment files beside it: the
// image built from Containerfile (run with a read-only root and a /data
// volume), compose.yaml against the Compose Specification's schema, and the
// Helm chart rendered by helm and decoded strictly into the Kubernetes API
// types. It is its own module so that helm's and Kubernetes' modules stay
// out of the server's go.mod. `make test-deploy` runs it
// (deploy/test/run.sh); docs/operations.md describes the files.
package deploy
