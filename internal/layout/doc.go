// Package layout holds only a test: it fails when a package imports what
// docs/DESIGN.md's package tables say it must not, or when the production
// binary links a test helper (internal/…, net/http/httptest, testing).
// Keep its rules and DESIGN.md's "must not" columns in step.
package layout
