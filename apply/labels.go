package apply

// Labels and names the guard puts on what it manages.
const (
	// FieldManager is the server-side apply field manager of every write.
	FieldManager = "driftguard"
	// GuardLabel marks a managed object with the name of its Guard; it is the
	// inventory the informer and the webhook select on.
	GuardLabel = "driftguard.io/guard"
)
