// Package provision is the example's end-to-end test: longrun with the team's own type,
// provision.environment, and its worker, on this machine. See README.md.
package provision
