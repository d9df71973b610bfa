// Package domain holds contenteval's entities, business rules and the store
// interfaces they need. It knows nothing of HTTP or SQL: handlers translate the
// API into calls here, and persistence implements the store interfaces.
// The ItemRunner is the one way a content item is evaluated (jobs, the
// stream, label evaluation). The kernel imports no package of this project
// but the rule engine, domain/rules; adapters (precheck, media, ocr,
// safehttp, blobstore) and persistence implement its ports.
package domain
