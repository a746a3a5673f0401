// Package settings reads what each Guard asks of the controllers (self-heal,
// the admission webhook, the compiled policies) from the manager's cache:
// its ignore rules, enforcement, policy data and break-glass TTL, with the
// defaults that apply when the Guard leaves them unset.
package settings
