// Package domain holds contenteval's entities, business rules and the store
// interfaces they need. It knows nothing of HTTP or SQL: handlers translate the
// API into calls here, and persistence implements the store interfaces.
// Packages under domain/ import no other package of this project.
package domain
