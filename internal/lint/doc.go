// Package lint holds checks on Strand's own code base, written as Go tests:
// the import layering that DESIGN.md draws (a package imports only packages
// on lower layers) and a doc comment on every package. It has no code that
// ships.
package lint
