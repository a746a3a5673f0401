package audit

// Protection is a change someone else made to the guard's own setup: its
// webhook configurations (restored at once, Action "restored"), its
// Deployment or a Guard (Action "recorded"). User and Manager name who made
// it, as far as the object tells (its newest managed-fields entry); a
// deletion does not say who deleted (the API server's own audit log does).
const Protection Type = "protection"
