// Package imaging holds the pure image parts of the precheck (docs/operations.md#image-precheck-hash-lists):
// sniffing and decoding images under size limits, the PDQ perceptual hash,
// md5/sha1/sha256 digests, hash-list file parsing, and an in-memory PDQ
// nearest-neighbour index with a Matcher that turns a lookup into a
// confidence band.
//
// Nothing here does I/O beyond the readers it is handed, and nothing here
// knows about HTTP, SQL or jobs: the service wires these pieces together.
// The only project package it imports is domain, for the precheck failure
// types and match confidences of the API.
package imaging
