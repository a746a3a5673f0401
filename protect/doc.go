// Package protect is the guard's protection of its own setup: it records
// the changes someone else makes to the guard's Deployment and to Guards
// (Recorder), and tells an uninstall (the Deployment gone) from an attack,
// so that what helm uninstall deletes stays deleted (DeploymentGone).
package protect
